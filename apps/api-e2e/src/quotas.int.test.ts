import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import mongoose from 'mongoose';
import { describe, expect, inject, it } from 'vitest';
import { DEFAULT_QUOTA_LIMITS, Environment, Quotas, Run, type QuotaLimitOverrides } from '@envengine/contracts';
import { setTenantQuotas, WORKSPACE_ROOT } from '@envengine/dev-stack';
import { PlacementClient } from '@envengine/service-clients';
import { TenantQuotas, TenantScopedModel } from '@envengine/tenant-data';
import { createTenant, deployProject, makeBundle, type ApiResponse, type TestTenant } from '@envengine/test-harness';
import { ASSET_CODE, runsManifest } from './runs-fixtures.ts';
import { insertDueSchedules, storedSchedulesOf } from './schedule-fixtures.ts';

const stack = inject('stack');
const run = promisify(execFile);
const quotaDatabases = () => ({
  placement: stack.databases['placement-service'],
  deployment: stack.databases['deployment-service'],
  secrets: stack.databases['secrets-service'],
});

/** `npm run admin -- quota …`, run as an operator runs it, against the test stack's servers. */
async function admin(args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'tools/admin/admin.ts', 'quota', ...args], {
    cwd: WORKSPACE_ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      MONGO_URL: stack.mongoUrl,
      GATEWAY_MONGO_DB: stack.databases.gateway,
      PLACEMENT_MONGO_DB: stack.databases['placement-service'],
      DEPLOYMENT_MONGO_DB: stack.databases['deployment-service'],
      SECRETS_MONGO_DB: stack.databases['secrets-service'],
    },
  });
  return stdout;
}

const setQuotas = (tenant: TestTenant, overrides: QuotaLimitOverrides) => setTenantQuotas(stack.mongoUrl, quotaDatabases(), tenant.tenantId, overrides);

async function quotasOf(tenant: TestTenant): Promise<Quotas> {
  const response = await tenant.api.get('/quotas');
  expect(response.status, response.text).toBe(200);
  return Quotas.parse((response.body as { data: unknown }).data);
}

/** A quota's refusal: 429, the code naming the quota, and a Retry-After. */
function expectRefusedBy(response: ApiResponse, code: string): void {
  expect(response.status, response.text).toBe(429);
  expect((response.body as { error: { code: string } }).error.code).toBe(code);
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
}

/** The runs project on a pool environment that no worker serves: its runs stay queued. */
function deployQueueingEnvironment(tenant: TestTenant, name: string): Promise<string> {
  return deployProject(tenant.api, {
    environment: name,
    storagePrefix: `file://${join(stack.dataDir, 'lake', tenant.tenantId, name)}`,
    executor: 'remote',
    bindings: { warehouse: {}, gate: { config: { open: true } } },
    files: ASSET_CODE,
    manifest: runsManifest(),
  });
}

const startRun = (tenant: TestTenant, environment: string) => tenant.api.post(`/environments/${environment}/runs`, { assets: ['orders'] });

describe('per-tenant quotas, through the gateway', () => {
  it("shows a new tenant's default limits and no use", async () => {
    const tenant = await createTenant(stack, 'quota-defaults');
    expect(await quotasOf(tenant)).toEqual({
      queued_runs: { limit: DEFAULT_QUOTA_LIMITS.queued_runs, used: 0 },
      queued_runs_per_environment: { limit: DEFAULT_QUOTA_LIMITS.queued_runs_per_environment, used: 0, by_environment: {} },
      environments: { limit: DEFAULT_QUOTA_LIMITS.environments, used: 0 },
      bundle_bytes: { limit: DEFAULT_QUOTA_LIMITS.bundle_bytes, used: 0 },
      materialization_bytes: { limit: DEFAULT_QUOTA_LIMITS.materialization_bytes, used: 0 },
      secrets_per_environment: { limit: DEFAULT_QUOTA_LIMITS.secrets_per_environment, used: 0, by_environment: {} },
      webhooks: { limit: DEFAULT_QUOTA_LIMITS.webhooks, used: 0 },
      pool_credentials: { limit: DEFAULT_QUOTA_LIMITS.pool_credentials, used: 0 },
      previews: { limit: DEFAULT_QUOTA_LIMITS.previews, used: 0 },
    });
  });

  it('refuses a preview past the quota of live previews, not a persistent environment, and counts them in GET /quotas', async () => {
    const tenant = await createTenant(stack, 'quota-previews');
    expect(await admin(['set', '--tenant', tenant.tenantName, 'previews=1'])).toMatch(/previews\s+1\n/);
    expect((await tenant.api.post('/environments', { name: 'pr-1', kind: 'preview', storage_prefix: 's3://lake/quota-previews/pr-1', executor: 'local' })).status).toBe(201);
    const refused = await tenant.api.post('/environments', { name: 'pr-2', kind: 'preview', storage_prefix: 's3://lake/quota-previews/pr-2', executor: 'local' });
    expectRefusedBy(refused, 'previews_quota_exceeded');
    expect((await tenant.api.get('/environments/pr-2')).status).toBe(404);
    expect((await tenant.api.post('/environments', { name: 'main', storage_prefix: 's3://lake/quota-previews/main', executor: 'local' })).status).toBe(201);
    expect((await quotasOf(tenant)).previews).toEqual({ limit: 1, used: 1 });
    // Deleted, its place is free again.
    expect((await tenant.api.delete('/environments/pr-1')).status).toBe(200);
    expect((await tenant.api.post('/environments', { name: 'pr-2', kind: 'preview', storage_prefix: 's3://lake/quota-previews/pr-2', executor: 'local' })).status).toBe(201);
  });

  it('refuses an environment past the quota the admin command set, and leaves other tenants alone', async () => {
    const [tenant, other] = await Promise.all([createTenant(stack, 'quota-envs'), createTenant(stack, 'quota-envs-other')]);
    const shown = await admin(['set', '--tenant', tenant.tenantName, 'environments=2']);
    expect(shown).toMatch(/environments\s+2\n/);
    expect(shown).toMatch(new RegExp(`queued_runs\\s+${DEFAULT_QUOTA_LIMITS.queued_runs} \\(default\\)`));
    for (const name of ['one', 'two']) expect((await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/quota/${name}`, executor: 'local' })).status).toBe(201);

    const refused = await tenant.api.post('/environments', { name: 'three', storage_prefix: 's3://lake/quota/three', executor: 'local' });
    expectRefusedBy(refused, 'environments_quota_exceeded');
    expect((await tenant.api.get('/environments/three')).status).toBe(404);
    expect((await quotasOf(tenant)).environments).toEqual({ limit: 2, used: 2 });
    // Another tenant's limit is the default.
    for (const name of ['one', 'two', 'three']) expect((await other.api.post('/environments', { name, storage_prefix: `s3://lake/quota/${name}`, executor: 'local' })).status).toBe(201);

    // Back to the default: the third is made.
    expect(await admin(['set', '--tenant', tenant.tenantName, 'environments=default'])).toMatch(/environments\s+\d+ \(default\)/);
    expect((await tenant.api.post('/environments', { name: 'three', storage_prefix: 's3://lake/quota/three', executor: 'local' })).status).toBe(201);
  });

  it('refuses a run past the queued runs of its environment, then past the tenant’s, and takes one again once a run leaves the queue', async () => {
    const tenant = await createTenant(stack, 'quota-runs');
    await setQuotas(tenant, { queued_runs: 3, queued_runs_per_environment: 2 });
    await deployQueueingEnvironment(tenant, 'prod');
    await deployQueueingEnvironment(tenant, 'dev');

    const first = await startRun(tenant, 'prod');
    expect(first.status).toBe(201);
    expect((await startRun(tenant, 'prod')).status).toBe(201);
    expectRefusedBy(await startRun(tenant, 'prod'), 'queued_runs_per_environment_quota_exceeded');
    expect((await startRun(tenant, 'dev')).status).toBe(201);
    expectRefusedBy(await startRun(tenant, 'dev'), 'queued_runs_quota_exceeded');
    // A schedule's tick meets the same full queue: it starts nothing, and records why.
    const dev = Environment.parse((await tenant.api.get('/environments/dev')).body.data);
    const mongo = await new MongoClient(stack.mongoUrl).connect();
    const placement = new PlacementClient({ origins: stack.replicaUrls['placement-service'], credential: stack.internalCredential });
    try {
      await insertDueSchedules(mongo, stack.databases['placement-service'], { tenantId: tenant.tenantId, environmentId: dev.id, names: ['nightly'], job: 'all', cron: '0 2 * * *', dueAt: new Date(Date.now() - 1000) });
      await placement.tickSchedules(0);
      const stored = (await storedSchedulesOf(mongo, stack.databases['placement-service'], dev.id)).get('nightly')!;
      expect(stored.last_tick).toMatchObject({ outcome: 'skipped_quota', run_id: null });
      expect(stored.ticks).toEqual({ skipped_quota: 1 });
    } finally {
      await placement.close();
      await mongo.close();
    }
    // Nothing was made by the refusals.
    const listed = await tenant.api.get('/environments/prod/runs');
    expect((listed.body as { data: unknown[] }).data).toHaveLength(2);
    const quotas = await quotasOf(tenant);
    expect(quotas.queued_runs).toEqual({ limit: 3, used: 3 });
    expect(quotas.queued_runs_per_environment).toEqual({ limit: 2, used: 2, by_environment: { prod: 2, dev: 1 } });

    // A canceled run is no longer queued: its environment and the tenant take one more.
    expect((await tenant.api.post(`/runs/${Run.parse((first.body as { data: unknown }).data).id}/cancel`, {})).status).toBe(200);
    expect((await startRun(tenant, 'dev')).status).toBe(201);
    expect((await quotasOf(tenant)).queued_runs_per_environment.by_environment).toEqual({ prod: 1, dev: 2 });
  });

  it('holds the queued-runs limit exactly when many runs are started at once', async () => {
    const tenant = await createTenant(stack, 'quota-race');
    await setQuotas(tenant, { queued_runs_per_environment: 5 });
    await deployQueueingEnvironment(tenant, 'prod');
    const answers = await Promise.all(Array.from({ length: 16 }, () => startRun(tenant, 'prod')));
    expect(answers.map((answer) => answer.status).sort()).toEqual([...Array(5).fill(201), ...Array(11).fill(429)]);
    expect((await quotasOf(tenant)).queued_runs_per_environment.used).toBe(5);
  });

  it('makes two processes’ admissions of one tenant take turns on its quota document, so that their counts hold the limit', async () => {
    // Two connections, as two replicas of a service have: each process orders only its own admissions.
    const dbName = `quota_race_${randomBytes(4).toString('hex')}`;
    const replicas = await Promise.all([0, 1].map(() => mongoose.createConnection(stack.mongoUrl, { dbName }).asPromise()));
    const [first, second] = replicas;
    try {
      const quotas = [new TenantQuotas(first!), new TenantQuotas(second!)];
      await quotas[0]!.ensureIndexes();
      await quotas[0]!.set('ten_race', { environments: 5 });
      const things = first!.collection('things');
      await things.insertOne({ tenant_id: 'ten_none' });
      const admitted = await Promise.all(
        Array.from({ length: 24 }, (_, index) =>
          quotas[index % 2]!.admission('ten_race', async (session, limits) => {
            const own = (index % 2 === 0 ? first : second)!.collection('things');
            if ((await own.countDocuments({ tenant_id: 'ten_race' }, { session })) >= limits.environments) return false;
            // A wide window between count and insert: without the fence the other process's admission counts inside it.
            await sleep(30);
            await own.insertOne({ tenant_id: 'ten_race', index }, { session });
            return true;
          }),
        ),
      );
      expect(admitted.filter(Boolean)).toHaveLength(5);
      expect(await things.countDocuments({ tenant_id: 'ten_race' })).toBe(5);
    } finally {
      await first!.dropDatabase();
      await Promise.all(replicas.map((connection) => connection.close()));
    }
  });

  it('lets a new tenant’s first admissions, made at once by several processes, all through (their quota-document upserts race)', async () => {
    // The CI's find: two first creates of a tenant raced to make its quota document, the
    // loser's upsert met E11000, and its create answered 409 environment_exists.
    const dbName = `quota_first_${randomBytes(4).toString('hex')}`;
    const replicas = await Promise.all([0, 1, 2].map(() => mongoose.createConnection(stack.mongoUrl, { dbName }).asPromise()));
    try {
      const quotas = replicas.map((connection) => new TenantQuotas(connection));
      await quotas[0]!.ensureIndexes();
      const tenants = Array.from({ length: 40 }, (_, index) => `ten_first${index}`);
      // Tenant after tenant, its first admission in each process at once.
      const refusals: string[] = [];
      for (const tenantId of tenants) {
        const outcomes = await Promise.allSettled(quotas.map((quota) => quota.admission(tenantId, async () => tenantId)));
        for (const outcome of outcomes) if (outcome.status === 'rejected') refusals.push(String(outcome.reason));
      }
      expect(refusals).toEqual([]);
      // One document a tenant, written by each of its three admissions.
      const documents = await replicas[0]!.collection('tenant_quotas').find({}, { projection: { admissions: 1 } }).toArray();
      expect(documents).toHaveLength(tenants.length);
      expect(documents.every((doc) => doc.admissions === 3)).toBe(true);
    } finally {
      await replicas[0]!.dropDatabase();
      await Promise.all(replicas.map((connection) => connection.close()));
    }
  });

  it('runs a racing upsert once more, but never onto another tenant’s document under the same key', async () => {
    const dbName = `upsert_race_${randomBytes(4).toString('hex')}`;
    const connection = await mongoose.createConnection(stack.mongoUrl, { dbName }).asPromise();
    try {
      const marks = TenantScopedModel.of(connection, 'Mark', new mongoose.Schema<{ _id: string; tenant_id: string; hits: number }>({ _id: String, tenant_id: String, hits: Number }, { versionKey: false }));
      await marks.ensureIndexes();
      const keys = Array.from({ length: 60 }, (_, index) => `mark_${index}`);
      // Key after key, three upserts at once: each round's three race for the one insert.
      for (const key of keys) {
        await Promise.all([
          marks.updateOne('ten_a', { _id: key }, { $inc: { hits: 1 } }, { upsert: true }),
          marks.updateOne('ten_a', { _id: key }, { $inc: { hits: 1 } }, { upsert: true }),
          marks.findOneAndUpdate('ten_a', { _id: key }, { $inc: { hits: 1 } }, { upsert: true }),
        ]);
      }
      expect((await marks.find('ten_a', {})).map((mark) => mark.hits)).toEqual(keys.map(() => 3));
      // Tenant B's upsert of A's key matches nothing of B's, and its insert meets A's document: refused, twice, and A's is untouched.
      await expect(marks.updateOne('ten_b', { _id: 'mark_0' }, { $inc: { hits: 100 } }, { upsert: true })).rejects.toMatchObject({ code: 11000 });
      expect((await marks.findOne('ten_a', { _id: 'mark_0' }))?.hits).toBe(3);
    } finally {
      await connection.dropDatabase();
      await connection.close();
    }
  });

  it('refuses a bundle that would pass the stored-bytes quota; the same bytes again take no room', async () => {
    const tenant = await createTenant(stack, 'quota-bundles');
    const upload = async (files: Record<string, string>) =>
      tenant.api.request('POST', '/bundles', { raw: await makeBundle(files), headers: { 'content-type': 'application/gzip' } });
    const first = await upload({ 'assets/a.js': 'export default async () => {};' });
    expect(first.status).toBe(201);
    const size = (first.body as { data: { size: number } }).data.size;
    await setQuotas(tenant, { bundle_bytes: size });

    // At the quota exactly: the same bytes again are still 200.
    expect((await upload({ 'assets/a.js': 'export default async () => {};' })).status).toBe(200);
    const refused = await upload({ 'assets/b.js': 'export default async () => { return 2; };' });
    expectRefusedBy(refused, 'bundle_bytes_quota_exceeded');
    expect(await quotasOf(tenant)).toMatchObject({ bundle_bytes: { limit: size, used: size } });
    // The refused bundle was not kept: raised above it, the same upload is new (201).
    await setQuotas(tenant, { bundle_bytes: null });
    expect((await upload({ 'assets/b.js': 'export default async () => { return 2; };' })).status).toBe(201);
  });

  it('refuses a new secret past the environment’s quota, but not a new version of one it has', async () => {
    const tenant = await createTenant(stack, 'quota-secrets');
    for (const name of ['prod', 'dev']) expect((await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/quota/${name}`, executor: 'local' })).status).toBe(201);
    await setQuotas(tenant, { secrets_per_environment: 2 });
    expect((await tenant.api.put('/environments/prod/secrets/a', { value: 'one' })).status).toBe(201);
    expect((await tenant.api.put('/environments/prod/secrets/b', { value: 'two' })).status).toBe(201);
    expectRefusedBy(await tenant.api.put('/environments/prod/secrets/c', { value: 'three' }), 'secrets_per_environment_quota_exceeded');
    expect((await tenant.api.put('/environments/prod/secrets/a', { value: 'one again' })).status).toBe(200);
    expect((await tenant.api.put('/environments/dev/secrets/c', { value: 'three' })).status).toBe(201);
    const listed = (await tenant.api.get('/environments/prod/secrets')).body as { data: Array<{ name: string }> };
    expect(listed.data.map((row) => row.name)).toEqual(['a', 'b']);
    expect((await quotasOf(tenant)).secrets_per_environment).toEqual({ limit: 2, used: 2, by_environment: { prod: 2, dev: 1 } });
  });

  it('refuses a webhook past the tenant’s webhooks, and takes one again once one is deleted', async () => {
    const tenant = await createTenant(stack, 'quota-webhooks');
    await setQuotas(tenant, { webhooks: 2 });
    const create = () => tenant.api.post('/webhooks', { url: 'http://203.0.113.9/hook', events: ['run.failed'] });
    const first = await create();
    expect(first.status, first.text).toBe(201);
    expect((await create()).status).toBe(201);
    expectRefusedBy(await create(), 'webhooks_quota_exceeded');
    expect(((await tenant.api.get('/webhooks')).body.data as unknown[]).length).toBe(2);
    expect((await quotasOf(tenant)).webhooks).toEqual({ limit: 2, used: 2 });
    expect((await tenant.api.delete(`/webhooks/${first.body.data.id}`)).status).toBe(200);
    expect((await create()).status).toBe(201);
  });

  it('refuses a pool credential past the tenant’s live ones, and takes one again once one is revoked', async () => {
    const tenant = await createTenant(stack, 'quota-pool-credentials');
    await setQuotas(tenant, { pool_credentials: 2 });
    const issue = () => tenant.api.post('/pool/credentials', { label: 'quota' });
    const first = await issue();
    expect(first.status, first.text).toBe(201);
    expect((await issue()).status).toBe(201);
    expectRefusedBy(await issue(), 'pool_credentials_quota_exceeded');
    expect(((await tenant.api.get('/pool')).body.data.credentials as unknown[]).length).toBe(2);
    expect((await quotasOf(tenant)).pool_credentials).toEqual({ limit: 2, used: 2 });
    expect((await tenant.api.request('DELETE', `/pool/credentials/${first.body.data.id}`)).status).toBe(200);
    expect((await quotasOf(tenant)).pool_credentials).toEqual({ limit: 2, used: 1 });
    expect((await issue()).status).toBe(201);
  });

  it('answers the admin command clearly for an unknown tenant', async () => {
    await expect(admin(['set', '--tenant', 'nobody-at-all', 'environments=1'])).rejects.toMatchObject({ stderr: expect.stringContaining('no tenant named nobody-at-all') });
  });
});
