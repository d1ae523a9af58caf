import { describe, expect, it } from 'vitest';
import { ManifestV1 } from '@envengine/contracts';
import { planRun } from './run-plan.ts';

const manifest = ManifestV1.parse({
  version: 1,
  assets: [
    { key: 'report', binding: 'w', entry: 'r.js', deps: ['orders', 'customers'] },
    { key: 'orders', binding: 'w', entry: 'o.js', deps: ['raw'] },
    { key: 'raw', binding: 'w', entry: 'raw.js' },
    { key: 'customers', binding: 'w', entry: 'c.js', schema: { columns: [{ name: 'id', type: 'integer' }] } },
  ],
  jobs: [{ name: 'all', assets: ['report', 'orders', 'raw', 'customers'] }],
});

describe('planRun', () => {
  it('orders a job after its dependencies', () => {
    const plan = planRun(manifest, { job: 'all' });
    expect(plan.ok && plan.assets.map((asset) => asset.key)).toEqual(['raw', 'orders', 'customers', 'report']);
    expect(plan.ok && plan.assets[2]!.schema).toEqual({ columns: [{ name: 'id', type: 'integer', nullable: false }] });
  });

  it('runs only the assets named, still in dependency order', () => {
    const plan = planRun(manifest, { assets: ['report', 'raw'] });
    expect(plan.ok && plan.assets.map((asset) => asset.key)).toEqual(['raw', 'report']);
  });

  it('names every unknown asset and an unknown job', () => {
    expect(planRun(manifest, { assets: ['raw', 'nope', 'nada'] })).toEqual({
      ok: false,
      details: [
        { path: 'assets.1', message: 'unknown asset "nope"' },
        { path: 'assets.2', message: 'unknown asset "nada"' },
      ],
    });
    expect(planRun(manifest, { job: 'missing' })).toEqual({ ok: false, details: [{ path: 'job', message: 'unknown job "missing"' }] });
  });

  it('suggests the closest job or asset for a typo', () => {
    expect(planRun(manifest, { job: 'al' })).toEqual({ ok: false, details: [{ path: 'job', message: 'unknown job "al". Did you mean "all"?' }] });
    expect(planRun(manifest, { assets: ['ordres'] })).toEqual({ ok: false, details: [{ path: 'assets.0', message: 'unknown asset "ordres". Did you mean "orders"?' }] });
  });
});
