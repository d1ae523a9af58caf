import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_QUOTA_LIMITS, Environment, ErrorBody, Quotas, Run, type QuotaLimitOverrides } from '@envengine/contracts';
import { setTenantQuotas } from '@envengine/dev-stack';
import { newId } from '@envengine/resource-ids';
import { createTenant, deployProject, uniqueName, type ApiClient, type TestTenant } from '@envengine/test-harness';
import { ASSET_CODE, runsManifest, waitForRun } from './runs-fixtures.ts';

/**
 * Issue 68, items 6 and 7: storage prefixes never overlap within a tenant (a token limited
 * to `pr-*` cannot reach another environment's files through a prefix of its own), a purge
 * removes only its own environment's files, and the `materialization_bytes` quota bounds
 * what one tenant's emits hold.
 */
const stack = inject('stack');

/** A `file://` prefix of the tenant's own under the engine's storage root (no segment says "data": the victim's name must not show in it). */
const lakePrefix = (tenant: TestTenant, ...segments: string[]) => `file://${join(stack.dataDir, 'lake', tenant.tenantId, ...segments)}`;

/** The runs project deployed to a new environment on `prefix`. */
function deployOn(api: ApiClient, environment: string, prefix: string): Promise<string> {
  return deployProject(api, {
    environment,
    storagePrefix: prefix,
    executor: 'local',
    bindings: { warehouse: {}, gate: { config: { open: true } } },
    files: ASSET_CODE,
    manifest: runsManifest(),
  });
}

async function runOf(api: ApiClient, tenant: TestTenant, environment: string, body: Record<string, unknown>): Promise<Run> {
  const created = await api.post(`/environments/${environment}/runs`, body);
  expect(created.status, created.text).toBe(201);
  return waitForRun(tenant, Run.parse(created.body.data).id, 60_000);
}

/** The files of the environment's latest materializations, as paths. */
async function latestFiles(api: ApiClient, environment: string): Promise<string[]> {
  const assets = (await api.get(`/environments/${environment}/assets`)).body.data as Array<{ latest_materialization: { location: string } | null }>;
  return assets.flatMap((asset) => (asset.latest_materialization ? [fileURLToPath(asset.latest_materialization.location)] : []));
}

async function quotasOf(api: ApiClient): Promise<Quotas> {
  const response = await api.get('/quotas');
  expect(response.status, response.text).toBe(200);
  return Quotas.parse(response.body.data);
}

const setQuotas = (tenant: TestTenant, overrides: QuotaLimitOverrides) =>
  setTenantQuotas(
    stack.mongoUrl,
    { placement: stack.databases['placement-service'], deployment: stack.databases['deployment-service'], secrets: stack.databases['secrets-service'] },
    tenant.tenantId,
    overrides,
  );

describe('storage prefixes never overlap within a tenant', () => {
  let tenant: TestTenant;
  let previews: ApiClient;
  let victim: string;
  let victimPrefix: string;
  let victimFiles: string[];

  beforeAll(async () => {
    tenant = await createTenant(stack, 'prefix-own');
    victim = uniqueName('data');
    victimPrefix = lakePrefix(tenant, 'warehouse');
    await deployOn(tenant.api, victim, victimPrefix);
    expect((await runOf(tenant.api, tenant, victim, { assets: ['orders'] })).status).toBe('succeeded');
    victimFiles = await latestFiles(tenant.api, victim);
    expect(victimFiles).toHaveLength(1);
    const minted = await tenant.api.post('/tokens', { name: 'previews only', role: 'admin', environments: ['pr-*'] });
    expect(minted.status, minted.text).toBe(201);
    previews = tenant.api.withToken(minted.body.data.token as string);
  });

  it("refuses a pr-* token's pr-6 on, inside or around another environment's prefix (409, without its name), and changes nothing", async () => {
    const before = (await tenant.api.get('/environments')).body;
    const [, path] = /^file:\/\/(.*)$/.exec(victimPrefix)!;
    for (const prefix of [victimPrefix, `${victimPrefix}/`, `file://localhost${path}`, `${victimPrefix}/pr-6`, dirname(victimPrefix), lakePrefix(tenant)]) {
      const refused = await previews.post('/environments', { name: 'pr-6', storage_prefix: prefix, executor: 'local' });
      const { error } = ErrorBody.parse(refused.body);
      expect([prefix, refused.status, error.code, error.details.map((detail) => detail.path)]).toEqual([prefix, 409, 'storage_prefix_taken', ['storage_prefix']]);
      // The token cannot see the other environment: neither its name nor its prefix is told.
      expect(error.message).not.toContain(victim);
      if (prefix !== victimPrefix) expect(error.message).not.toContain(`${victimPrefix} `);
    }
    // An s3:// prefix is compared the same way.
    expect((await tenant.api.post('/environments', { name: uniqueName('s3-a'), storage_prefix: 's3://lake/own-a', executor: 'local' })).status).toBe(201);
    for (const prefix of ['s3://lake/own-a', 's3://lake/own-a/', 's3://lake/own-a/pr-6']) {
      const refused = await previews.post('/environments', { name: 'pr-6', storage_prefix: prefix, executor: 'local' });
      expect([prefix, refused.status, refused.body.error?.code]).toEqual([prefix, 409, 'storage_prefix_taken']);
    }
    expect((await previews.get('/environments/pr-6')).status).toBe(404);
    expect(((await tenant.api.get('/environments')).body.data as Environment[]).length).toBe((before.data as Environment[]).length + 1);
    // A token that sees the other environment is told which one.
    const told = await tenant.api.post('/environments', { name: uniqueName('again'), storage_prefix: victimPrefix, executor: 'local' });
    expect(told.status).toBe(409);
    expect(told.body.error.message).toContain(`"${victim}"`);
    // So the token's purge has nothing to reach: the other environment's file is where it was, and read as ever.
    expect((await previews.delete('/environments/pr-6?purge_data=true')).status).toBe(404);
    for (const file of victimFiles) expect(existsSync(file)).toBe(true);
    const latest = (await tenant.api.get(`/environments/${victim}/assets`)).body.data.find((asset: { key: string }) => asset.key === 'orders').latest_materialization;
    expect((await tenant.api.get(`/environments/${victim}/assets/orders/materializations/${latest.id}/data`)).status).toBe(200);
  });

  it("lets pr-7 live beside it on a prefix of its own, and pr-7's purge removes its own files and leaves the other environment's", async () => {
    await deployOn(previews, 'pr-7', lakePrefix(tenant, 'warehouse2'));
    expect((await runOf(previews, tenant, 'pr-7', { assets: ['orders'] })).status).toBe('succeeded');
    const own = await latestFiles(previews, 'pr-7');
    expect(own).toHaveLength(1);
    expect((await previews.delete('/environments/pr-7?purge_data=true')).status).toBe(200);
    for (const file of own) expect(existsSync(file)).toBe(false);
    for (const file of victimFiles) expect(existsSync(file)).toBe(true);
  });

  it('gives one of two overlapping creates made at once its 201, and the other 409', async () => {
    const contested = lakePrefix(tenant, uniqueName('race'));
    for (let round = 0; round < 5; round++) {
      const [first, second] = await Promise.all([
        tenant.api.post('/environments', { name: `race-a-${round}`, storage_prefix: `${contested}/${round}`, executor: 'local' }),
        tenant.api.post('/environments', { name: `race-b-${round}`, storage_prefix: round % 2 === 0 ? `${contested}/${round}/deeper` : `${contested}/${round}`, executor: 'local' }),
      ]);
      expect([round, [first.status, second.status].sort()]).toEqual([round, [201, 409]]);
    }
  });

  describe('a purge of an environment that shares its prefix with a live one (made before overlaps were refused)', () => {
    let mongo: MongoClient;
    beforeAll(async () => {
      mongo = await new MongoClient(stack.mongoUrl).connect();
    });
    afterAll(async () => {
      await mongo.close();
    });

    it("removes none of the live environment's files", async () => {
      const environments = mongo.db(stack.databases['placement-service']).collection<Record<string, unknown> & { _id: string }>('environments');
      const original = await environments.findOne({ tenant_id: tenant.tenantId, name: victim });
      expect(original).not.toBeNull();
      // The document an older engine would have made for `pr-6` on the victim's prefix.
      const twin = uniqueName('pr-twin');
      await environments.insertOne({ ...original!, _id: newId('env'), name: twin, active_deployment_id: null, inserted_at: new Date(), updated_at: new Date() });
      expect((await tenant.api.get(`/environments/${twin}`)).body.data.storage_prefix).toBe(victimPrefix);

      expect((await tenant.api.delete(`/environments/${twin}?purge_data=true`)).status).toBe(200);
      expect((await tenant.api.get(`/environments/${twin}`)).status).toBe(404);
      for (const file of victimFiles) expect(existsSync(file)).toBe(true);
    });
  });
});

describe('the materialization_bytes quota', () => {
  let tenant: TestTenant;
  let other: TestTenant;

  beforeAll(async () => {
    [tenant, other] = await Promise.all([createTenant(stack, 'mat-quota'), createTenant(stack, 'mat-quota-other')]);
  });

  it("shows in /quotas with its default limit and the tenant's stored bytes", async () => {
    expect((await quotasOf(other.api)).materialization_bytes).toEqual({ limit: DEFAULT_QUOTA_LIMITS.materialization_bytes, used: 0 });
  });

  it("refuses the emit past it (the asset fails naming the quota, its file removed), while another tenant's runs succeed; deleting frees the bytes", async () => {
    const prefix = lakePrefix(tenant, 'quota');
    await deployOn(tenant.api, 'prod', prefix);
    await deployOn(other.api, 'prod', lakePrefix(other, 'quota'));
    expect((await runOf(tenant.api, tenant, 'prod', { assets: ['orders'] })).status).toBe('succeeded');
    const one = (await quotasOf(tenant.api)).materialization_bytes.used;
    expect(one).toBeGreaterThan(0);
    // A few KB at most: room for two materializations of `orders`, not three.
    const limit = 3 * one - 1;
    expect(limit).toBeLessThan(8 * 1024);
    await setQuotas(tenant, { materialization_bytes: limit });
    expect((await runOf(tenant.api, tenant, 'prod', { assets: ['orders'] })).status).toBe('succeeded');
    expect((await quotasOf(tenant.api)).materialization_bytes).toEqual({ limit, used: 2 * one });

    const [refused, neighbour] = await Promise.all([
      runOf(tenant.api, tenant, 'prod', { assets: ['orders'] }),
      runOf(other.api, other, 'prod', { job: 'all' }),
    ]);
    expect(neighbour.status).toBe('succeeded');
    expect(refused.status).toBe('failed');
    const outcome = refused.attempts[0]!.assets.find((asset) => asset.key === 'orders')!;
    expect(outcome).toMatchObject({ status: 'failed', materialization_id: null });
    expect(outcome.error).toContain('materialization_bytes');
    // Nothing recorded, and the written file is gone: two files, two records, the same use.
    expect((await quotasOf(tenant.api)).materialization_bytes).toEqual({ limit, used: 2 * one });
    expect(((await tenant.api.get('/environments/prod/assets/orders/materializations')).body.data as unknown[]).length).toBe(2);
    const directory = fileURLToPath(`${prefix}/orders`);
    // Removed before the refusal reached the asset, so before the run ended.
    expect(readdirSync(directory)).toHaveLength(2);
    // Another tenant's limit is the default, and its use its own.
    expect((await quotasOf(other.api)).materialization_bytes.limit).toBe(DEFAULT_QUOTA_LIMITS.materialization_bytes);

    // Deleting the environment (its records go) frees the bytes: the next emit is taken.
    expect((await tenant.api.delete('/environments/prod?purge_data=true')).status).toBe(200);
    expect((await quotasOf(tenant.api)).materialization_bytes).toEqual({ limit, used: 0 });
    await deployOn(tenant.api, 'prod', prefix);
    expect((await runOf(tenant.api, tenant, 'prod', { assets: ['orders'] })).status).toBe('succeeded');
    expect((await quotasOf(tenant.api)).materialization_bytes.used).toBe(one);
  });

  it('holds the limit exactly when many emits are recorded at once', async () => {
    const racer = await createTenant(stack, 'mat-quota-race');
    await deployOn(racer.api, 'prod', lakePrefix(racer, 'race'));
    expect((await runOf(racer.api, racer, 'prod', { assets: ['orders'] })).status).toBe('succeeded');
    const one = (await quotasOf(racer.api)).materialization_bytes.used;
    await setQuotas(racer, { materialization_bytes: 3 * one });
    const runs = await Promise.all(Array.from({ length: 6 }, () => runOf(racer.api, racer, 'prod', { assets: ['orders'] })));
    expect(runs.filter((run) => run.status === 'succeeded')).toHaveLength(2);
    expect((await quotasOf(racer.api)).materialization_bytes).toEqual({ limit: 3 * one, used: 3 * one });
  });
});
