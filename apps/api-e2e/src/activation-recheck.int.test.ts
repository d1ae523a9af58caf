import { beforeAll, describe, expect, inject, it } from 'vitest';
import { AssetListing, dataEnvelope } from '@envengine/contracts';
import { activationWindows, createTenant, makeBundle, manifestOf, overlappingWindows, recordMaterialization, type TestTenant } from '@envengine/test-harness';
import { z } from 'zod';

const stack = inject('stack');
const AssetList = dataEnvelope(z.array(AssetListing));

describe('activation re-check and assets', () => {
  let tenant: TestTenant;
  let bundleRef: string;
  let environmentId: string;
  const v1 = [{ name: 'id', type: 'integer' }, { name: 'amount', type: 'number', nullable: true }];
  const v2 = [{ name: 'id', type: 'string' }, { name: 'amount', type: 'number', nullable: true }];

  beforeAll(async () => {
    tenant = await createTenant(stack, 'recheck');
    environmentId = (await tenant.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/prod', executor: 'local' })).body.data.id;
    await tenant.api.put('/environments/prod/bindings/warehouse', {});
    const bundle = await makeBundle({ 'assets/orders.js': 'x', 'assets/customers.js': 'x' });
    bundleRef = (await tenant.api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref;
  });

  it('lists no assets before a deployment is active', async () => {
    expect((await tenant.api.get('/environments/prod/assets')).body).toEqual({ data: [] });
  });

  it('quarantines the latest materialization whose stored columns no longer match, on ingest and on rollback', async () => {
    const first = await tenant.api.post('/environments/prod/deployments', {
      manifest: manifestOf([{ key: 'orders', columns: v1 }, { key: 'customers', columns: [{ name: 'id', type: 'integer' }] }]),
      bundle_ref: bundleRef,
      git: { branch: 'main', sha: 'v1' },
    });
    expect(first.status).toBe(201);
    // A run of v1 stored orders with v1's columns, and customers with its own.
    await recordMaterialization(stack, tenant.tenantId, { environment_id: environmentId, asset_key: 'orders', columns: v1.map((c) => ({ nullable: false, ...c })), row_count: 10 });
    await recordMaterialization(stack, tenant.tenantId, { environment_id: environmentId, asset_key: 'customers', columns: [{ name: 'id', type: 'integer', nullable: false }], row_count: 3 });

    let listing = AssetList.parse((await tenant.api.get('/environments/prod/assets')).body).data;
    expect(listing.map((asset) => [asset.key, asset.status, asset.latest_materialization?.status])).toEqual([
      ['orders', 'latest', 'latest'],
      ['customers', 'latest', 'latest'],
    ]);

    // v2 changes orders' id to string: activating it quarantines the v1-shaped latest.
    const second = await tenant.api.post('/environments/prod/deployments', {
      manifest: manifestOf([{ key: 'orders', columns: v2 }, { key: 'customers', columns: [{ name: 'id', type: 'integer' }] }]),
      bundle_ref: bundleRef,
      git: { branch: 'main', sha: 'v2' },
    });
    expect(second.status).toBe(201);
    expect(second.body.data.recheck).toEqual({ checked: 2, quarantined: ['orders'] });
    expect(second.body.data.validation.warnings.map((warning: { code: string }) => warning.code)).toEqual(['contract_changed']);

    listing = AssetList.parse((await tenant.api.get('/environments/prod/assets')).body).data;
    const orders = listing.find((asset) => asset.key === 'orders')!;
    expect(orders.status).toBe('quarantined');
    expect(orders.latest_materialization).toMatchObject({ status: 'quarantined', row_count: 10 });
    expect(orders.latest_materialization!.quarantine).toMatchObject({ deployment_id: second.body.data.id, reason: expect.stringContaining('id') });
    expect(orders.schema).toEqual({ columns: v2.map((c) => ({ nullable: false, ...c })) });
    expect(listing.find((asset) => asset.key === 'customers')!.latest_materialization!.status).toBe('latest');

    // v2 runs write a v2-shaped orders; rolling back to v1 quarantines that one.
    await recordMaterialization(stack, tenant.tenantId, { environment_id: environmentId, asset_key: 'orders', columns: v2.map((c) => ({ nullable: false, ...c })), row_count: 12 });
    const rollback = await tenant.api.post(`/deployments/${first.body.data.id}/activate`, {});
    expect(rollback.status).toBe(200);
    expect(rollback.body.data).toMatchObject({ active: true, recheck: { checked: 2, quarantined: ['orders'] } });
    listing = AssetList.parse((await tenant.api.get('/environments/prod/assets')).body).data;
    expect(listing.find((asset) => asset.key === 'orders')!.latest_materialization).toMatchObject({
      status: 'quarantined',
      row_count: 12,
      quarantine: { deployment_id: first.body.data.id },
    });
    expect((await tenant.api.get('/environments/prod')).body.data.git_ref).toBe('v1');
  });

  it('serializes concurrent activations: the pointer ends on one of them, a ready one', async () => {
    const ids: string[] = [];
    for (const sha of ['c1', 'c2', 'c3']) {
      const response = await tenant.api.post('/environments/prod/deployments', {
        manifest: manifestOf([{ key: 'orders', columns: v1 }]),
        bundle_ref: bundleRef,
        git: { branch: 'main', sha },
        activate: false,
      });
      ids.push(response.body.data.id);
    }
    const results = await Promise.all(ids.map((id) => tenant.api.post(`/deployments/${id}/activate`, {})));
    for (const result of results) expect(result.status).toBe(200);
    // Each activation's re-check and pointer move ran while no other one's did.
    const windows = (await activationWindows(stack.temporalAddress, [`activations-${environmentId}`], ['activate'])).filter((window) =>
      ids.includes(window.deploymentId),
    );
    expect(windows.map((window) => window.deploymentId).sort()).toEqual([...ids].sort());
    expect(overlappingWindows(windows)).toEqual([]);
    const environment = (await tenant.api.get('/environments/prod')).body.data;
    expect(ids).toContain(environment.active_deployment_id);
    const active = (await tenant.api.get('/environments/prod/deployments?active=true')).body.data;
    expect(active).toHaveLength(1);
    expect(active[0].status).toBe('ready');
    expect(environment.git_ref).toBe(active[0].git.sha);
  });
});
