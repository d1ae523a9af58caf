import { describe, expect, it } from 'vitest';
import { upstreamFor } from './upstream-routes.ts';

describe('upstreamFor', () => {
  it.each([
    ['/environments', 'placement'],
    ['/environments/prod', 'placement'],
    ['/environments/prod/placement', 'placement'],
    ['/environments/prod/schedules/pause', 'placement'],
    ['/environments/prod/runs', 'placement'],
    ['/placement', 'placement'],
    ['/runs/run_1/cancel', 'placement'],
    ['/environments/prod/bindings/warehouse', 'secrets'],
    ['/environments/prod/secrets', 'secrets'],
    ['/environments/prod/deployments', 'deployment'],
    ['/environments/prod/assets', 'deployment'],
    ['/deployments/dep_1/activate', 'deployment'],
    ['/bundles', 'deployment'],
  ])('%s goes to %s', (path, upstream) => {
    expect(upstreamFor(path)).toBe(upstream);
  });

  it.each(['/', '/environmentsx', '/tokens', '/environments-prod'])('%s has no owner', (path) => {
    expect(upstreamFor(path)).toBeUndefined();
  });
});
