import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { engineAppNamePrefix } from '@envengine/service-kit';
import { callResolve, createTenant, makeBundle, manifestOf, recordMaterialization, until, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

interface ProfileEntry {
  ns: string;
  op: string;
  planSummary?: string;
  command?: Record<string, unknown>;
  /** The client's `appName`: an engine service's starts with `engineAppNamePrefix`. */
  appName?: string;
}

/**
 * Every query the services run for a request must be answered from an index. MongoDB's
 * profiler records each operation with its plan while every endpoint is driven once;
 * then no recorded plan may be a collection scan.
 */
describe('query plans of the request paths', () => {
  let mongo: MongoClient;
  let tenant: TestTenant;
  const databases = () => Object.values(stack.databases);

  beforeAll(async () => {
    mongo = await new MongoClient(stack.mongoUrl).connect();
    tenant = await createTenant(stack, 'plans');
    for (const name of databases()) {
      await mongo.db(name).command({ profile: 0 });
      await mongo.db(name).collection('system.profile').drop().catch(() => undefined);
      await mongo.db(name).command({ profile: 2 });
    }
  });

  afterAll(async () => {
    for (const name of databases()) await mongo?.db(name).command({ profile: 0 });
    await mongo?.close();
  });

  it('drives every endpoint once and finds no collection scan', async () => {
    const api = tenant.api;
    expect((await api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/p', executor: 'local' })).status).toBe(201);
    const environmentId = (await api.get('/environments/prod')).body.data.id as string;
    await api.get('/environments');
    await api.post('/environments/prod/placement', { executor: 'remote' });
    await api.post('/placement', { executor: 'local' });
    await api.post('/environments/prod/schedules/pause', { reason: 'plans' });
    await api.post('/environments/prod/schedules/resume', {});
    await api.post('/environments', { name: 'idem', storage_prefix: 's3://lake/idem', executor: 'local' }, { headers: { 'Idempotency-Key': 'plans-1' } });
    await api.post('/environments', { name: 'idem', storage_prefix: 's3://lake/idem', executor: 'local' }, { headers: { 'Idempotency-Key': 'plans-1' } });

    expect((await api.put('/environments/prod/secrets/pw', { value: 'v1' })).status).toBe(201);
    expect((await api.put('/environments/prod/secrets/pw', { value: 'v2' })).status).toBe(200);
    await api.get('/environments/prod/secrets');
    expect((await api.put('/environments/prod/bindings/warehouse', { config: { h: 1 }, secret_refs: { password: 'pw' } })).status).toBe(201);
    await api.get('/environments/prod/bindings');
    expect((await callResolve(stack, { tenantId: tenant.tenantId, body: { environment_id: environmentId, binding: 'warehouse' } })).status).toBe(200);
    await api.put('/environments/prod/secrets/gone', { value: 'x' });
    expect((await api.delete('/environments/prod/secrets/gone')).status).toBe(200);
    await api.put('/environments/prod/bindings/other', {});
    expect((await api.delete('/environments/prod/bindings/other')).status).toBe(200);

    const bundle = await makeBundle({ 'assets/orders.js': 'x' });
    const bundleRef = (await api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref as string;
    expect((await api.request('HEAD', `/bundles/${bundleRef}`)).status).toBe(200);
    const first = await api.post('/environments/prod/deployments', { manifest: manifestOf([{ key: 'orders', columns: [{ name: 'id', type: 'integer' }] }]), bundle_ref: bundleRef });
    expect(first.status, first.text).toBe(201);
    await recordMaterialization(stack, tenant.tenantId, { environment_id: environmentId, asset_key: 'orders', columns: [{ name: 'id', type: 'integer', nullable: false }], row_count: 1 });
    const second = await api.post('/environments/prod/deployments', { manifest: manifestOf([{ key: 'orders', columns: [{ name: 'id', type: 'string' }] }]), bundle_ref: bundleRef });
    expect(second.status, second.text).toBe(201);
    expect((await api.post(`/deployments/${first.body.data.id}/activate`, {})).status).toBe(200);
    await api.get('/environments/prod/deployments');
    await api.get('/environments/prod/deployments?active=true');
    await api.get(`/deployments/${first.body.data.id}`);
    await api.get('/environments/prod/assets');
    const [recorded] = (await api.get('/environments/prod/assets/orders/materializations?limit=5')).body.data as Array<{ id: string }>;
    await api.get(`/environments/prod/assets/orders/materializations?before=${recorded!.id}`);
    await api.get('/environments/prod/assets/unknown/materializations');
    // Recorded without a file: the lookups run, and the answer is 404.
    expect((await api.get(`/environments/prod/assets/orders/materializations/${recorded!.id}/data`)).status).toBe(404);
    expect((await api.get(`/environments/prod/assets/orders/materializations/${recorded!.id}/preview`)).status).toBe(404);
    // The lifecycle: settings, a run limit and a TTL, a run under the limit, then the whole tear-down.
    expect((await api.post('/environments', { name: 'pr', storage_prefix: 's3://lake/pr', executor: 'remote', kind: 'preview', ttl_hours: 1 })).status).toBe(201);
    expect((await api.request('PATCH', '/environments/pr', { json: { ttl_hours: 2, max_concurrent_runs: 1, strict: true } })).status).toBe(200);
    expect((await api.request('PATCH', '/environments/prod', { json: { max_concurrent_runs: 1 } })).status).toBe(200);
    expect((await api.post('/environments/prod/runs', { assets: ['orders'] })).status).toBe(201);
    expect((await api.post('/environments/prod/runs', { assets: ['orders'] })).body.data.waiting_for_slot).toBe(true);
    expect((await api.request('PATCH', '/environments/prod', { json: { max_concurrent_runs: null } })).status).toBe(200);
    expect((await api.post('/environments/prod/runs', { assets: ['orders'] })).status).toBe(201);
    expect((await api.delete('/environments/prod?force=true&purge_data=true')).status).toBe(200);
    expect((await api.delete('/environments/pr')).status).toBe(200);
    // The audit log, by each of its filters (the relays' reads and writes ran all along).
    const [newest] = (await until(() => api.get('/events?limit=1'), (answer) => answer.body.data.length === 1, 20_000, 50)).body.data as Array<{ id: string }>;
    for (const query of ['', '&environment=prod', '&type=run.*', '&type=secret.rotated', `&subject=${environmentId}`, `&cursor=${newest!.id}`, `&after=${newest!.id}`, '&since=2026-01-01T00:00:00Z']) {
      expect((await api.get(`/events?limit=5${query}`)).status).toBe(200);
    }

    const entries: ProfileEntry[] = [];
    for (const name of databases()) {
      await mongo.db(name).command({ profile: 0 });
      entries.push(...(await mongo.db(name).collection<ProfileEntry>('system.profile').find({}).toArray()));
    }
    // The services' own operations: files beside this one on the shared stack query these
    // databases through their own drivers too (secret-resolution reads its audit rows by
    // attempt id, which no request path does, and CI saw that scan here).
    const ownedBy = (entry: ProfileEntry) => Object.values(stack.databases).some((name) => entry.appName?.startsWith(engineAppNamePrefix(name)));
    const planned = entries.filter((entry) => entry.planSummary && !entry.ns.includes('.system.') && ownedBy(entry));
    // The profiler saw the request paths: reads and conditional writes, each with a plan.
    expect(planned.length).toBeGreaterThan(30);
    const scans = planned
      .filter((entry) => entry.planSummary!.includes('COLLSCAN'))
      .map((entry) => `${entry.ns} ${entry.op} ${JSON.stringify(entry.command?.filter ?? entry.command?.q ?? entry.command?.query ?? entry.command)}`);
    expect(scans).toEqual([]);
  });
});
