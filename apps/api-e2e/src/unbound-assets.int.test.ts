import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { AssetListing, dataEnvelope } from '@envengine/contracts';
import { createTenant, makeBundle, type TestTenant } from '@envengine/test-harness';
import { z } from 'zod';
import { waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');

const FILES = {
  'assets/numbers.js': 'export default async (ctx) => { await ctx.emit([{ n: 1 }, { n: 2 }]); };',
  'assets/total.js': "export default async (ctx) => { const rows = await ctx.read('numbers'); await ctx.emit([{ total: rows.reduce((sum, row) => sum + row.n, 0) }]); };",
  'assets/asks.js': "export default async (ctx) => { await ctx.connection('warehouse'); };",
};
// No asset names a binding, and the environment has none.
const MANIFEST = {
  version: 1,
  assets: [
    { key: 'numbers', entry: 'assets/numbers.js', schema: { columns: [{ name: 'n', type: 'integer' }] } },
    { key: 'total', entry: 'assets/total.js', deps: ['numbers'] },
    { key: 'asks', entry: 'assets/asks.js' },
  ],
};

describe('assets without a binding store under the environment prefix with the engine storage (docs/manifest.md)', () => {
  let tenant: TestTenant;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'unbound');
  });

  for (const [scheme, prefixOf] of [
    ['file://', (tenantId: string) => `file://${join(stack.dataDir, 'lake', tenantId, 'unbound')}`],
    ["s3:// on the engine's store", (_tenantId: string) => 's3://lake/unbound'],
  ] as const) {
    it(`deploys, emits, reads and lists them on ${scheme}, and refuses ctx.connection`, async () => {
      const name = scheme === 'file://' ? 'unbound-file' : 'unbound-s3';
      const prefix = scheme === 'file://' ? `${prefixOf(tenant.tenantId)}-file` : `${prefixOf(tenant.tenantId)}-s3`;
      expect((await tenant.api.post('/environments', { name, storage_prefix: prefix, executor: 'local' })).status).toBe(201);
      const bundleRef = (await tenant.api.request('POST', '/bundles', { raw: await makeBundle(FILES), headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref as string;
      const deployed = await tenant.api.post(`/environments/${name}/deployments`, { manifest: MANIFEST, bundle_ref: bundleRef });
      expect(deployed.status, deployed.text).toBe(201);
      expect(deployed.body.data.validation).toEqual({ errors: [], warnings: [] });

      const started = await tenant.api.post(`/environments/${name}/runs`, { assets: ['numbers', 'total'] });
      const run = await waitForRun(tenant, started.body.data.id as string);
      expect(run.status, JSON.stringify(run)).toBe('succeeded');
      const assets = dataEnvelope(z.array(AssetListing)).parse((await tenant.api.get(`/environments/${name}/assets`)).body).data;
      expect(assets.map((asset) => [asset.key, asset.binding])).toEqual([['numbers', null], ['total', null], ['asks', null]]);
      const total = assets.find((asset) => asset.key === 'total')!.latest_materialization!;
      expect(total.location!.startsWith(`${prefix}/total/`)).toBe(true);
      const preview = (await tenant.api.get(`/environments/${name}/assets/total/materializations/${total.id}/preview`)).body.data as { rows: unknown[] };
      expect(preview.rows).toEqual([{ total: 3 }]);

      const asks = await waitForRun(tenant, (await tenant.api.post(`/environments/${name}/runs`, { assets: ['asks'] })).body.data.id as string);
      expect(asks.status).toBe('failed');
      expect(asks.error).toContain('asset "asks" declares no binding');
    });
  }
});
