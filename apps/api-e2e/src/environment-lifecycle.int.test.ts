import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { connectRedis, everyRedisKey, type RedisConnection } from '@envengine/redis-connections';
import { newId } from '@envengine/resource-ids';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DeletedEnvironmentResponse, Environment, EnvironmentResponse, INTERNAL_HEADERS, Run } from '@envengine/contracts';
import { createTenant, deployProject, startTestStack, uniqueName, until, type StackInfo, type TestStack, type TestTenant } from '@envengine/test-harness';
import { allEvents } from './events-fixtures.ts';
import { ASSET_CODE, issueCredential, runsManifest, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');

const NIGHTLY = { name: 'nightly', job: 'all', cron: '0 3 * * *', timezone: 'UTC' };

/** The runs project with one schedule, deployed to a new environment; returns the environment. */
async function deployed(tenant: TestTenant, name: string, executor: 'local' | 'remote', settings: Record<string, unknown> = {}, dataDir = stack.dataDir): Promise<Environment> {
  await deployProject(tenant.api, {
    environment: name,
    storagePrefix: `file://${join(dataDir, 'lake', tenant.tenantId, name)}`,
    executor,
    settings,
    bindings: { warehouse: {}, gate: { config: { open: false } } },
    files: ASSET_CODE,
    manifest: { ...runsManifest(), schedules: [NIGHTLY] },
  });
  return EnvironmentResponse.parse((await tenant.api.get(`/environments/${name}`)).body).data;
}

/** The files of the environment's latest materializations, as paths. */
async function materializedFiles(tenant: TestTenant, environment: string): Promise<string[]> {
  const assets = (await tenant.api.get(`/environments/${environment}/assets`)).body.data as Array<{ latest_materialization: { location: string } | null }>;
  return assets.flatMap((asset) => (asset.latest_materialization ? [fileURLToPath(asset.latest_materialization.location)] : []));
}

/**
 * The events of a deleted environment: they outlive it by design (its deletion stays
 * visible in the audit log), each scope's outbox keeping a published row for an hour and
 * the audit log for EVENT_RETENTION_DAYS.
 */
const EVENT_COLLECTIONS = new Set(['event_outbox', 'events']);

/** Every document of the engine's databases, but for its events, whose JSON names one of `ids`, as `<db>.<collection>: <json>`. */
async function documentsNaming(mongo: MongoClient, info: StackInfo, ids: string[]): Promise<string[]> {
  const found: string[] = [];
  for (const database of Object.values(info.databases)) {
    const db = mongo.db(database);
    for (const { name } of await db.listCollections({}, { nameOnly: true }).toArray()) {
      if (EVENT_COLLECTIONS.has(name)) continue;
      for (const doc of await db.collection(name).find({}).toArray()) {
        const json = JSON.stringify(doc);
        if (ids.some((id) => json.includes(id))) found.push(`${database}.${name}: ${json.slice(0, 300)}`);
      }
    }
  }
  return found;
}

/** Redis keys (on every master of a Redis Cluster), and members of its lists and sorted sets (BullMQ's queues), that name one of `ids`. */
async function redisEntriesNaming(connection: RedisConnection, ids: string[]): Promise<string[]> {
  const found: string[] = [];
  for await (const { server, key } of everyRedisKey(connection)) {
    if (ids.some((id) => key.includes(id))) found.push(key);
    const type = await server.type(key);
    const members = type === 'list' ? await server.lrange(key, 0, -1) : type === 'zset' ? await server.zrange(key, 0, -1) : [];
    for (const member of members) if (ids.some((id) => member.includes(id))) found.push(`${key} ∋ ${member}`);
  }
  return found;
}

describe('environment lifecycle through the gateway', () => {
  let tenant: TestTenant;
  let other: TestTenant;
  let mongo: MongoClient;
  let redis: RedisConnection;
  let temporalConnection: Connection;
  let temporal: Client;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'lifecycle');
    other = await createTenant(stack, 'lifecycle-other');
    mongo = await new MongoClient(stack.mongoUrl).connect();
    redis = connectRedis(stack.redisUrl);
    temporalConnection = await Connection.connect({ address: stack.temporalAddress });
    temporal = new Client({ connection: temporalConnection });
  });

  afterAll(async () => {
    await mongo?.close();
    redis?.disconnect();
    await temporalConnection?.close();
  });

  it('deletes an environment: nothing of it is left in MongoDB, Temporal or Redis, its secrets are destroyed, and its name is free again', async () => {
    const name = uniqueName('doomed');
    const environment = await deployed(tenant, name, 'local');
    // One run that ran (log lines, materializations, files), then, on remote with no worker, runs that stay queued with their jobs in Redis.
    const ran = await waitForRun(tenant, Run.parse((await tenant.api.post(`/environments/${name}/runs`, { job: 'all' })).body.data).id);
    expect(ran.status).toBe('succeeded');
    const files = await materializedFiles(tenant, name);
    expect(files).toHaveLength(2);
    expect((await tenant.api.post(`/environments/${name}/placement`, { executor: 'remote' })).status).toBe(200);
    expect((await tenant.api.put(`/environments/${name}/secrets/api_key`, { value: 'lifecycle-canary-value' })).status).toBe(201);
    expect((await tenant.api.put(`/environments/${name}/secrets/api_key`, { value: 'lifecycle-canary-value-2' })).status).toBe(200);
    const secretIds = (await mongo.db(stack.databases['secrets-service']).collection('secrets').find({ environment_id: environment.id }).toArray()).map((row) => String(row['_id']));
    expect(secretIds).toHaveLength(1);
    // Its stored schedule, which the scans below must see go.
    expect(await mongo.db(stack.databases['placement-service']).collection('schedules').countDocuments({ environment_id: environment.id, name: NIGHTLY.name })).toBe(1);
    const runs = await Promise.all([1, 2].map(async () => Run.parse((await tenant.api.post(`/environments/${name}/runs`, { job: 'all' })).body.data)));
    const attemptIds = runs.map((run) => run.attempts[0]!.id);
    await until(() => redisEntriesNaming(redis, attemptIds), (entries) => entries.length > 0, 10_000, 100);
    const ids = [environment.id, ...secretIds, ran.id, ...runs.map((run) => run.id), ...attemptIds];
    expect(await mongo.db(stack.databases['placement-service']).collection('attempt_logs').countDocuments({ run_id: ran.id })).toBeGreaterThan(0);
    // Positive controls: the scans see what is there before the delete.
    expect((await documentsNaming(mongo, stack, ids)).length).toBeGreaterThan(5);

    const deleted = await tenant.api.delete(`/environments/${name}`);
    expect(deleted.status).toBe(200);
    expect(DeletedEnvironmentResponse.parse(deleted.body)).toEqual({ data: { name } });

    expect((await tenant.api.get(`/environments/${name}`)).status).toBe(404);
    expect((await tenant.api.get('/environments')).body.data.map((item: Environment) => item.name)).not.toContain(name);
    for (const run of runs) expect((await tenant.api.get(`/runs/${run.id}`)).status).toBe(404);
    expect(await documentsNaming(mongo, stack, ids)).toEqual([]);
    expect(await redisEntriesNaming(redis, attemptIds)).toEqual([]);
    // Its events outlive it: the audit log still shows its deletion, by whom.
    const deletion = await until(() => tenant.api.get(`/events?environment=${name}&type=environment.deleted`), (answer) => answer.body.data.length === 1, 20_000, 50);
    expect(deletion.body.data[0]).toMatchObject({ subject: { kind: 'environment', id: environment.id }, actor: tenant.tokenId, request_id: deleted.headers.get('x-request-id') });
    // Without ?purge_data=true the files stay.
    for (const file of files) expect(existsSync(file)).toBe(true);
    // The activation workflow is ended too: nothing can activate a deployment of it any more.
    expect((await temporal.workflow.getHandle(`activations-${environment.id}`).describe()).status.name).not.toBe('RUNNING');

    // The name is free; the new environment is a new one, with none of the old one's secrets or bindings.
    const again = await tenant.api.post('/environments', { name, storage_prefix: environment.storage_prefix, executor: 'local' });
    expect(again.status).toBe(201);
    expect(again.body.data.id).not.toBe(environment.id);
    expect((await tenant.api.get(`/environments/${name}/secrets`)).body).toEqual({ data: [] });
    expect((await tenant.api.get(`/environments/${name}/bindings`)).body).toEqual({ data: [] });
    expect((await tenant.api.put(`/environments/${name}/secrets/api_key`, { value: 'x' })).body.data.version).toBe(1);
    expect(await mongo.db(stack.databases['secrets-service']).collection('secrets').countDocuments({ environment_id: again.body.data.id })).toBe(1);
    expect((await tenant.api.delete(`/environments/${name}`)).status).toBe(200);
  });

  it('removes the materialization files with ?purge_data=true, records or not, and only those under its storage prefix', async () => {
    const name = uniqueName('purged');
    // An earlier environment of the same name and prefix, deleted without a purge: its files stay, and no record names them any more.
    await deployed(tenant, name, 'local');
    expect((await waitForRun(tenant, Run.parse((await tenant.api.post(`/environments/${name}/runs`, { job: 'all' })).body.data).id)).status).toBe('succeeded');
    const unrecorded = await materializedFiles(tenant, name);
    expect((await tenant.api.delete(`/environments/${name}`)).status).toBe(200);
    for (const file of unrecorded) expect(existsSync(file)).toBe(true);
    await deployed(tenant, name, 'local');
    const neighbour = uniqueName('neighbour');
    await deployed(tenant, neighbour, 'local');
    for (const environment of [name, neighbour]) {
      expect((await waitForRun(tenant, Run.parse((await tenant.api.post(`/environments/${environment}/runs`, { job: 'all' })).body.data).id)).status).toBe('succeeded');
    }
    const files = await materializedFiles(tenant, name);
    const neighbourFiles = await materializedFiles(tenant, neighbour);
    for (const file of [...files, ...neighbourFiles]) expect(existsSync(file)).toBe(true);
    // A record naming a file outside its prefix (as a hostile worker might report one) is not followed.
    const records = mongo.db(stack.databases['deployment-service']).collection('materializations');
    const own = await records.findOne({ location: pathToFileURL(files[0]!).href });
    expect(own).not.toBeNull();
    await records.insertOne({ ...own!, _id: newId('mat') as never, location: pathToFileURL(neighbourFiles[0]!).href });

    expect((await tenant.api.delete(`/environments/${name}?purge_data=true`)).status).toBe(200);
    for (const file of [...files, ...unrecorded]) expect(existsSync(file)).toBe(false);
    for (const file of neighbourFiles) expect(existsSync(file)).toBe(true);
    expect((await tenant.api.delete(`/environments/${neighbour}`)).status).toBe(200);
  });

  it('answers 409 runs_running while an attempt runs; ?force=true cancels it and deletes', async () => {
    const name = uniqueName('busy');
    await deployed(tenant, name, 'local');
    // The gate is closed: the attempt runs until it is opened or canceled.
    const run = Run.parse((await tenant.api.post(`/environments/${name}/runs`, { assets: ['gated'] })).body.data);
    await until(() => tenant.api.get(`/runs/${run.id}`), (response) => response.body.data.status === 'running', 20_000, 100);

    const refused = await tenant.api.delete(`/environments/${name}`);
    expect([refused.status, refused.body.error.code]).toEqual([409, 'runs_running']);
    expect(refused.body.error.message).toContain('force=true');
    // Nothing changed: the environment is active and the run still running.
    expect((await tenant.api.get(`/environments/${name}`)).body.data.status).toBe('active');
    expect((await tenant.api.get(`/runs/${run.id}`)).body.data.status).toBe('running');

    const forced = await tenant.api.delete(`/environments/${name}?force=true`);
    expect([forced.status, forced.body]).toEqual([200, { data: { name } }]);
    expect((await tenant.api.get(`/runs/${run.id}`)).status).toBe(404);
  });

  it("gives another tenant's environment 404 and leaves it as it was", async () => {
    const name = uniqueName('mine');
    expect((await tenant.api.post('/environments', { name, storage_prefix: 's3://lake/p/x', executor: 'local' })).status).toBe(201);
    for (const path of [`/environments/${name}`, `/environments/${name}?force=true&purge_data=true`]) {
      const response = await other.api.delete(path);
      expect([response.status, response.body.error.code]).toEqual([404, 'not_found']);
    }
    expect((await other.api.request('PATCH', `/environments/${name}`, { json: { max_concurrent_runs: 1 } })).status).toBe(404);
    expect((await tenant.api.get(`/environments/${name}`)).body.data).toMatchObject({ status: 'active', max_concurrent_runs: null });
    expect((await tenant.api.delete('/environments/no-such-environment')).status).toBe(404);
  });

  it('refuses bad lifecycle input with 422, changing nothing', async () => {
    const persistent = uniqueName('keep');
    const preview = uniqueName('pr');
    expect((await tenant.api.post('/environments', { name: persistent, storage_prefix: 's3://lake/p/a', executor: 'local' })).status).toBe(201);
    expect((await tenant.api.post('/environments', { name: preview, storage_prefix: 's3://lake/p/b', executor: 'local', kind: 'preview' })).status).toBe(201);
    const before = (await tenant.api.get('/environments')).body.data;

    const creates: Array<[Record<string, unknown>, string]> = [
      [{ kind: 'preview', ttl_hours: 0 }, 'ttl_hours'],
      [{ kind: 'preview', ttl_hours: -1 }, 'ttl_hours'],
      [{ kind: 'preview', ttl_hours: '2' }, 'ttl_hours'],
      [{ ttl_hours: 2 }, 'ttl_hours'],
      [{ max_concurrent_runs: 0 }, 'max_concurrent_runs'],
      [{ max_concurrent_runs: 1.5 }, 'max_concurrent_runs'],
      [{ status: 'deleting' }, 'status'],
      [{ expires_at: '2030-01-01T00:00:00.000Z' }, 'expires_at'],
    ];
    for (const [extra, path] of creates) {
      const response = await tenant.api.post('/environments', { name: uniqueName('bad'), storage_prefix: 's3://lake/p/c', executor: 'local', ...extra });
      expect([JSON.stringify(extra), response.status, response.body.error.code]).toEqual([JSON.stringify(extra), 422, 'invalid_request']);
      expect(response.body.error.details.map((detail: { path: string }) => detail.path)).toContain(path);
    }
    const patches: Array<[string, Record<string, unknown>]> = [
      [preview, { ttl_hours: 0 }],
      [preview, { ttl_hours: -3 }],
      [preview, { ttl_hours: 'soon' }],
      [persistent, { ttl_hours: 2 }],
      [persistent, { max_concurrent_runs: 0 }],
      [persistent, { name: 'renamed' }],
      ...['id', 'kind', 'active_deployment_id', 'schedules_paused', 'status', 'expires_at'].map((field): [string, Record<string, unknown>] => [persistent, { [field]: null }]),
      [persistent, {}],
    ];
    for (const [name, body] of patches) {
      const response = await tenant.api.request('PATCH', `/environments/${name}`, { json: body });
      expect([JSON.stringify(body), response.status, response.body.error.code]).toEqual([JSON.stringify(body), 422, 'invalid_request']);
    }
    for (const query of ['force=yes', 'purge_data=1', 'forced=true']) {
      const response = await tenant.api.delete(`/environments/${persistent}?${query}`);
      expect([query, response.status, response.body.error.code]).toEqual([query, 422, 'invalid_request']);
    }
    expect((await tenant.api.get('/environments')).body.data).toEqual(before);
  });

  it('PATCHes egress, strict, ttl_hours and max_concurrent_runs; null removes a TTL or a limit', async () => {
    const name = uniqueName('pr');
    const created = EnvironmentResponse.parse((await tenant.api.post('/environments', { name, storage_prefix: 's3://lake/p/d', executor: 'local', kind: 'preview', ttl_hours: 24 })).body).data;
    expect(created).toMatchObject({ kind: 'preview', ttl_hours: 24, status: 'active', max_concurrent_runs: null });
    const expiresIn = Date.parse(created.expires_at!) - Date.parse(created.inserted_at);
    expect(expiresIn).toBe(24 * 3_600_000);

    const patched = await tenant.api.request('PATCH', `/environments/${name}`, { json: { egress: 'public', strict: true, ttl_hours: 48, max_concurrent_runs: 3 } });
    expect(patched.status).toBe(200);
    const environment = EnvironmentResponse.parse(patched.body).data;
    expect(environment).toMatchObject({ egress: 'public', strict: true, ttl_hours: 48, max_concurrent_runs: 3 });
    expect(Date.parse(environment.expires_at!)).toBeGreaterThan(Date.parse(created.expires_at!));
    expect((await tenant.api.get(`/environments/${name}`)).body.data).toEqual(environment);

    const cleared = EnvironmentResponse.parse((await tenant.api.request('PATCH', `/environments/${name}`, { json: { ttl_hours: null, max_concurrent_runs: null } })).body).data;
    expect(cleared).toMatchObject({ ttl_hours: null, expires_at: null, max_concurrent_runs: null });
    // A persistent environment carries the fields too, null.
    const persistent = (await tenant.api.post('/environments', { name: uniqueName('p'), storage_prefix: 's3://lake/p/e', executor: 'local' })).body.data;
    expect(persistent).toMatchObject({ ttl_hours: null, expires_at: null, max_concurrent_runs: null, status: 'active' });
  });

  it('tears a preview down when its TTL lapses (a Temporal timer), with its files; a deploy moves expires_at; its name answers environment_expired', async () => {
    const name = uniqueName('pr-ttl');
    const environment = await deployed(tenant, name, 'local', { kind: 'preview', ttl_hours: 1 });
    expect(environment.purge_data_on_expiry).toBe(true);
    expect((await waitForRun(tenant, Run.parse((await tenant.api.post(`/environments/${name}/runs`, { job: 'all' })).body.data).id)).status).toBe('succeeded');
    const files = await materializedFiles(tenant, name);
    expect(files.length).toBeGreaterThan(0);
    const firstExpiry = Date.parse(environment.expires_at!);
    const redeployed = await tenant.api.post(`/environments/${name}/deployments`, {
      manifest: { ...runsManifest(), schedules: [NIGHTLY] },
      bundle_ref: (await tenant.api.get(`/deployments/${environment.active_deployment_id}`)).body.data.bundle_ref,
    });
    expect(redeployed.status).toBe(201);
    const moved = EnvironmentResponse.parse((await tenant.api.get(`/environments/${name}`)).body).data;
    expect(Date.parse(moved.expires_at!)).toBeGreaterThan(firstExpiry);
    expect(Date.parse(moved.expires_at!) - Date.now()).toBeLessThanOrEqual(3_600_000);
    const timer = temporal.workflow.getHandle(`expiry-${environment.id}`);
    expect((await timer.describe()).status.name).toBe('RUNNING');

    // Two seconds from now: the timer wakes, the stored expiry has passed, the tear-down runs.
    const shortened = await tenant.api.request('PATCH', `/environments/${name}`, { json: { ttl_hours: 2 / 3600 } });
    expect(shortened.status).toBe(200);
    const expiresAt = EnvironmentResponse.parse(shortened.body).data.expires_at!;
    const gone = await until(() => tenant.api.get(`/environments/${name}`), (response) => response.status === 404, 30_000, 200);
    expect(gone.body).toEqual({
      error: { code: 'environment_expired', message: expect.stringContaining(`expired at ${expiresAt}`), details: [{ path: 'expires_at', message: expiresAt }] },
    });
    // A delete of the name says the same; another tenant's name of it is a plain 404.
    expect((await tenant.api.delete(`/environments/${name}`)).body.error.code).toBe('environment_expired');
    expect((await other.api.get(`/environments/${name}`)).body.error.code).toBe('not_found');
    await timer.result();
    expect((await timer.describe()).status.name).toBe('COMPLETED');
    for (const file of files) expect(existsSync(file)).toBe(false);
    // Each expiry the timer slept towards was noticed once (less than an hour was left of each),
    // the last one for the instant it expired at, before the deletion; by the engine.
    const lifecycle = await until(
      () => allEvents(tenant.api, `&environment=${name}`),
      (events) => events.some((event) => event.type === 'environment.deleted'),
      30_000,
      200,
    );
    const notices = lifecycle.filter((event) => event.type === 'environment.expiring');
    const noticedFor = notices.map((event) => (event.data as { expires_at: string }).expires_at);
    expect(new Set(noticedFor).size).toBe(noticedFor.length);
    expect(noticedFor.at(-1)).toBe(expiresAt);
    expect(notices.every((event) => event.actor === 'engine' && event.subject.id === environment.id)).toBe(true);
    expect(lifecycle.findIndex((event) => event.type === 'environment.expiring' && (event.data as { expires_at: string }).expires_at === expiresAt)).toBeLessThan(lifecycle.findIndex((event) => event.type === 'environment.deleted'));
    // Only the record that answers environment_expired names it, and goes by itself after a week.
    const left = await documentsNaming(mongo, stack, [environment.id]);
    expect(left).toHaveLength(1);
    expect(left[0]).toMatch(new RegExp(`^${stack.databases['placement-service']}\\.expired_environments: `));
    const record = await mongo.db(stack.databases['placement-service']).collection('expired_environments').findOne({ _id: environment.id as never });
    expect((record!['forget_at'] as Date).getTime() - Date.parse(expiresAt)).toBe(7 * 24 * 3_600_000);
    // The name is free again, and the new environment is the one a GET shows.
    expect((await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/${name}`, executor: 'local' })).status).toBe(201);
    expect((await tenant.api.get(`/environments/${name}`)).status).toBe(200);
    expect((await tenant.api.delete(`/environments/${name}`)).status).toBe(200);
    expect((await tenant.api.get(`/environments/${name}`)).body.error.code).toBe('environment_expired');
  });

  it('keeps a preview\'s files when its TTL lapses if it was made with purge_data_on_expiry: false', async () => {
    const name = uniqueName('pr-keep');
    const environment = await deployed(tenant, name, 'local', { kind: 'preview', ttl_hours: 1, purge_data_on_expiry: false });
    expect(environment.purge_data_on_expiry).toBe(false);
    expect((await waitForRun(tenant, Run.parse((await tenant.api.post(`/environments/${name}/runs`, { job: 'all' })).body.data).id)).status).toBe('succeeded');
    const files = await materializedFiles(tenant, name);
    expect(files.length).toBeGreaterThan(0);
    expect((await tenant.api.request('PATCH', `/environments/${name}`, { json: { ttl_hours: 1 / 3600 } })).status).toBe(200);
    await until(() => tenant.api.get(`/environments/${name}`), (response) => response.body?.error?.code === 'environment_expired', 30_000, 200);
    await temporal.workflow.getHandle(`teardown-${environment.id}`).result();
    for (const file of files) expect(existsSync(file)).toBe(true);
  });


  it("stops a deleted preview's expiry timer: a DELETE before the TTL lapses terminates it", async () => {
    const name = uniqueName('pr-del');
    const created = EnvironmentResponse.parse((await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/${name}`, executor: 'local', kind: 'preview', ttl_hours: 1 })).body).data;
    const timer = temporal.workflow.getHandle(`expiry-${created.id}`);
    expect((await timer.describe()).status.name).toBe('RUNNING');
    expect((await tenant.api.delete(`/environments/${name}`)).status).toBe(200);
    await temporal.workflow.getHandle(`teardown-${created.id}`).result();
    const stopped = await timer.describe();
    expect(stopped.status.name).toBe('TERMINATED');
    expect((await tenant.api.get(`/environments/${name}`)).body.error.code).toBe('not_found');
  });
  it("refuses a pool worker's start of an attempt that waits for a slot: the limit holds against a worker that knows its id", async () => {
    const name = uniqueName('pool-limited');
    await deployed(tenant, name, 'remote', { max_concurrent_runs: 1 });
    const first = Run.parse((await tenant.api.post(`/environments/${name}/runs`, { assets: ['orders'] })).body.data);
    const second = Run.parse((await tenant.api.post(`/environments/${name}/runs`, { assets: ['orders'] })).body.data);
    expect([first.waiting_for_slot, second.waiting_for_slot]).toEqual([false, true]);
    const pool = tenant.api.withToken((await issueCredential(tenant)).token);
    const worker = { id: 'limit-worker-1', name: 'limit', executor: 'remote', concurrency: 2, sandbox: 'bwrap' };
    const jumped = await pool.post(`/worker/attempts/${second.attempts[0]!.id}/start`, { worker });
    expect([409, 404], jumped.text).toContain(jumped.status);
    expect((await tenant.api.get(`/runs/${second.id}`)).body.data).toMatchObject({ status: 'queued', waiting_for_slot: true });
    expect((await pool.post(`/worker/attempts/${first.attempts[0]!.id}/start`, { worker })).status).toBe(200);
    expect((await tenant.api.delete(`/environments/${name}?force=true`)).status).toBe(200);
  });

  it('a delete racing run starts ends with each run refused or canceled, or with the delete refused; never a run on a deleted environment', async () => {
    for (let round = 0; round < 4; round += 1) {
      const name = uniqueName('race');
      const environment = await deployed(tenant, name, round % 2 === 0 ? 'local' : 'remote');
      const starts = Array.from({ length: 6 }, () => tenant.api.post(`/environments/${name}/runs`, { assets: ['orders'] }));
      const deletion = tenant.api.delete(`/environments/${name}`);
      const [deleted, ...started] = await Promise.all([deletion, ...starts]);
      const runIds = started.filter((response) => response.status === 201).map((response) => response.body.data.id as string);
      for (const response of started) expect([201, 404, 409]).toContain(response.status);
      if (deleted.status === 200) {
        for (const id of runIds) expect((await tenant.api.get(`/runs/${id}`)).status).toBe(404);
        expect(await mongo.db(stack.databases['placement-service']).collection('runs').countDocuments({ environment_id: environment.id })).toBe(0);
      } else {
        expect([deleted.status, deleted.body.error.code]).toEqual([409, 'runs_running']);
        for (const id of runIds) await waitForRun(tenant, id);
        expect((await tenant.api.delete(`/environments/${name}`)).status).toBe(200);
      }
    }
  });
});

describe('a stack of its own', () => {
  let own: TestStack;
  let temporalConnection: Connection;
  let temporal: Client;

  beforeAll(async () => {
    // A DELETE waits one second for its tear-down before it answers 503 (the tear-down goes on).
    // One of each whatever the profile: the test stops the one workflow-worker and kills the one placement-service.
    // The runner's own asset limit (15 min by default), not the shared stack's 4 s: an asset
    // held at a closed gate holds its slot for as long as the test needs, however loaded the machine.
    own = await startTestStack({ replicas: 1, mongoUrl: stack.mongoUrl, temporalAddress: stack.temporalAddress, env: { TEARDOWN_WAIT_MS: '1000' } });
    temporalConnection = await Connection.connect({ address: stack.temporalAddress });
    temporal = new Client({ connection: temporalConnection });
  });

  afterAll(async () => {
    await own?.stop();
    await temporalConnection?.close();
  });

  describe('run slots, with assets held at a gate', () => {
    let tenant: TestTenant;

    beforeAll(async () => {
      tenant = await createTenant(own.info, 'slots');
    });

    it('with max_concurrent_runs 2, ten runs started at once never run more than two at a time, and all succeed in order of creation', async () => {
      const name = uniqueName('limited');
      await deployed(tenant, name, 'local', { max_concurrent_runs: 2 }, own.info.dataDir);
      const created: Run[] = [];
      // The gate is closed: the first two hold their slots until it opens, whatever the machine's speed.
      for (let index = 0; index < 10; index += 1) created.push(Run.parse((await tenant.api.post(`/environments/${name}/runs`, { assets: ['gated'] })).body.data));
      expect(created.map((run) => run.waiting_for_slot)).toEqual([false, false, ...Array(8).fill(true)]);
      await until(() => tenant.api.get(`/runs/${created[1]!.id}`), (response) => response.body.data.status === 'running', 20_000, 100);
      expect((await tenant.api.put(`/environments/${name}/bindings/gate`, { config: { open: true } })).status).toBe(200);
      const finished = await Promise.all(created.map((run) => waitForRun(tenant, run.id, 60_000)));
      expect(finished.map((run) => run.status)).toEqual(Array(10).fill('succeeded'));
      expect(finished.every((run) => run.waiting_for_slot === false)).toBe(true);

      // From the attempts' own start and finish times: an end before a start at the same instant.
      const events = finished.flatMap((run) => run.attempts.flatMap((attempt) => [
        { at: Date.parse(attempt.started_at!), delta: 1 },
        { at: Date.parse(attempt.finished_at!), delta: -1 },
      ]));
      events.sort((a, b) => a.at - b.at || a.delta - b.delta);
      let running = 0;
      let most = 0;
      for (const event of events) {
        running += event.delta;
        most = Math.max(most, running);
      }
      expect(most).toBeLessThanOrEqual(2);
      expect(most).toBe(2);
      const byStart = [...finished].sort((a, b) => Date.parse(a.attempts[0]!.started_at!) - Date.parse(b.attempts[0]!.started_at!));
      expect(byStart.map((run) => run.id)).toEqual(created.map((run) => run.id));
    });

    it('applies a changed limit to runs not yet started, and shows why a run waits', async () => {
      const name = uniqueName('gated');
      await deployed(tenant, name, 'local', { max_concurrent_runs: 1 }, own.info.dataDir);
      const runs: Run[] = [];
      for (let index = 0; index < 3; index += 1) runs.push(Run.parse((await tenant.api.post(`/environments/${name}/runs`, { assets: ['gated'] })).body.data));
      expect(runs.map((run) => run.waiting_for_slot)).toEqual([false, true, true]);
      await until(() => tenant.api.get(`/runs/${runs[0]!.id}`), (response) => response.body.data.status === 'running', 20_000, 100);
      const waiting = (await tenant.api.get(`/runs/${runs[1]!.id}`)).body.data;
      expect(waiting).toMatchObject({ status: 'queued', waiting_for_slot: true, waiting_for_worker: false });

      expect((await tenant.api.request('PATCH', `/environments/${name}`, { json: { max_concurrent_runs: 2 } })).status).toBe(200);
      await until(() => tenant.api.get(`/runs/${runs[1]!.id}`), (response) => response.body.data.status === 'running', 20_000, 100);
      expect((await tenant.api.get(`/runs/${runs[2]!.id}`)).body.data).toMatchObject({ status: 'queued', waiting_for_slot: true });

      expect((await tenant.api.put(`/environments/${name}/bindings/gate`, { config: { open: true } })).status).toBe(200);
      const finished = await Promise.all(runs.map((run) => waitForRun(tenant, run.id, 60_000)));
      expect(finished.map((run) => run.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    });

    it('places an attempt that waited for a slot by the placement when it is dispatched, not the one when its run was made', async () => {
      const name = uniqueName('moved');
      await deployed(tenant, name, 'local', { max_concurrent_runs: 1 }, own.info.dataDir);
      const first = Run.parse((await tenant.api.post(`/environments/${name}/runs`, { assets: ['gated'] })).body.data);
      const second = Run.parse((await tenant.api.post(`/environments/${name}/runs`, { assets: ['orders'] })).body.data);
      expect([first.waiting_for_slot, second.waiting_for_slot]).toEqual([false, true]);
      await until(() => tenant.api.get(`/runs/${first.id}`), (response) => response.body.data.status === 'running', 20_000, 100);
      expect((await tenant.api.post(`/environments/${name}/placement`, { executor: 'remote' })).status).toBe(200);
      expect((await tenant.api.put(`/environments/${name}/bindings/gate`, { config: { open: true } })).status).toBe(200);
      // The first keeps the placement it started with; the second, dispatched after the change, goes to the pool.
      expect((await waitForRun(tenant, first.id, 60_000)).attempts.map((attempt) => attempt.executor)).toEqual(['local']);
      const dispatched = await until(() => tenant.api.get(`/runs/${second.id}`), (response) => response.body.data.waiting_for_slot === false, 20_000, 100);
      expect(Run.parse(dispatched.body.data)).toMatchObject({ status: 'queued', attempts: [{ executor: 'remote', status: 'queued' }] });
      // This stack's DELETE waits a second for its tear-down, then answers 503 while it goes on.
      expect([200, 503]).toContain((await tenant.api.delete(`/environments/${name}?force=true`)).status);
      await until(() => tenant.api.get(`/environments/${name}`), (response) => response.status === 404, 60_000, 250);
      expect((await tenant.api.get(`/environments/${name}`)).status).toBe(404);
    });
  });

  describe('an interrupted delete', () => {
    let tenant: TestTenant;

    beforeAll(async () => {
      tenant = await createTenant(own.info, 'interrupted');
    });

    async function deployedHere(name: string): Promise<Environment> {
      await deployProject(tenant.api, {
        environment: name,
        storagePrefix: `file://${join(own.info.dataDir, 'lake', name)}`,
        executor: 'local',
        bindings: { warehouse: {}, gate: { config: { open: false } } },
        files: ASSET_CODE,
        manifest: { ...runsManifest(), schedules: [NIGHTLY] },
      });
      expect((await tenant.api.put(`/environments/${name}/secrets/token`, { value: 'interrupted-canary' })).status).toBe(201);
      // Runs made (their admission stripes too, which a delete's mark must close).
      for (let index = 0; index < 2; index += 1) {
        expect((await waitForRun(tenant, Run.parse((await tenant.api.post(`/environments/${name}/runs`, { assets: ['orders'] })).body.data).id)).status).toBe('succeeded');
      }
      return EnvironmentResponse.parse((await tenant.api.get(`/environments/${name}`)).body).data;
    }

    it('refuses writes while it is deleting, and completes after the placement-service is killed and restarted', async () => {
      const lost = await deployedHere('lost');
      const stalled = await deployedHere('stalled');
      const bundleRef = (await tenant.api.get(`/deployments/${lost.active_deployment_id}`)).body.data.bundle_ref;

      /** The activation's own write of the environment's stored schedules (placement's internal API). */
      const reconcileSchedules = (environmentId: string) =>
        fetch(`${own.info.urls['placement-service']}/internal/v1/environments/${environmentId}/schedules`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json', [INTERNAL_HEADERS.credential]: own.info.internalCredential, [INTERNAL_HEADERS.tenantId]: tenant.tenantId },
          body: JSON.stringify({ schedules: [NIGHTLY] }),
        }).then(async (response) => ({ status: response.status, body: (await response.json()) as { error?: { code: string } } }));
      // Positive control: an active environment's schedules are reconciled.
      expect((await reconcileSchedules(lost.id)).status).toBe(200);

      // No workflow-worker: the tear-downs are started and marked, and wait.
      await own.services.processes['workflow-worker'].stop();
      for (const name of ['lost', 'stalled']) {
        const response = await tenant.api.delete(`/environments/${name}`);
        expect([response.status, response.body.error.code]).toEqual([503, 'unavailable']);
        expect(response.headers.get('retry-after')).not.toBeNull();
        expect((await tenant.api.get(`/environments/${name}`)).body.data.status).toBe('deleting');
      }

      // Every write to a deleting environment is 409 environment_deleting, and changes nothing.
      const writes: Array<[string, string, unknown]> = [
        ['POST', '/environments/lost/runs', { job: 'all' }],
        ['PATCH', '/environments/lost', { max_concurrent_runs: 1 }],
        ['POST', '/environments/lost/placement', { executor: 'remote' }],
        ['POST', '/environments/lost/schedules/pause', {}],
        ['PUT', '/environments/lost/secrets/token', { value: 'changed' }],
        ['PUT', '/environments/lost/bindings/warehouse', { mode: 'read_only' }],
        ['POST', '/environments/lost/deployments', { manifest: runsManifest(), bundle_ref: bundleRef }],
        ['POST', `/deployments/${lost.active_deployment_id}/activate`, {}],
      ];
      for (const [method, path, json] of writes) {
        const response = await tenant.api.request(method, path, { json });
        expect([method, path, response.status, response.body.error?.code]).toEqual([method, path, 409, 'environment_deleting']);
      }
      // An activation's reconcile landing after the mark would leave schedules behind the tear-down's removal (the soak found one).
      const late = await reconcileSchedules(lost.id);
      expect([late.status, late.body.error?.code]).toEqual([409, 'environment_deleting']);
      expect((await tenant.api.post('/environments', { name: 'lost', storage_prefix: 's3://lake/p/x', executor: 'local' })).body.error.code).toBe('environment_exists');
      const lostNow = (await tenant.api.get('/environments/lost')).body.data;
      expect(lostNow).toMatchObject({ status: 'deleting', executor: 'local', schedules_paused: false, max_concurrent_runs: null, active_deployment_id: lost.active_deployment_id });
      expect((await tenant.api.get('/environments/lost/runs')).body.data.map((run: Run) => run.status)).toEqual(['succeeded', 'succeeded']);

      // One tear-down is lost (terminated), as after a crash between the mark and its start; then the placement-service dies.
      await temporal.workflow.getHandle(`teardown-${lost.id}`).terminate('simulated loss');
      const placement = own.services.processes['placement-service'];
      process.kill(placement.pid!, 'SIGKILL');
      await placement.waitForExit();

      // The workflow-worker comes back: the other tear-down goes on to its first step on the
      // placement scope's data, which waits on that scope's queue while its service is dead.
      await own.services.restart('workflow-worker');
      const stalledTeardown = temporal.workflow.getHandle(`teardown-${stalled.id}`);
      const waiting = await until(
        () => stalledTeardown.describe(),
        (description) => (description.raw.pendingActivities ?? []).some((activity) => activity.activityType?.name === 'deleteEnvironmentSchedules'),
        30_000,
        200,
      );
      expect((waiting.raw.pendingActivities ?? []).map((activity) => activity.activityType?.name)).toEqual(['deleteEnvironmentSchedules']);

      // The placement-service restarts: it resumes the lost tear-down; the stalled one's next retry passes.
      await own.services.restart('placement-service', { TEARDOWN_WAIT_MS: '1000' });
      for (const name of ['lost', 'stalled']) {
        await until(() => tenant.api.get(`/environments/${name}`), (response) => response.status === 404, 60_000, 250);
      }
      const mongo = await new MongoClient(stack.mongoUrl).connect();
      try {
        expect(await documentsNaming(mongo, own.info, [lost.id, stalled.id])).toEqual([]);
      } finally {
        await mongo.close();
      }
      // The environment's document goes in the last step; the workflow ends just after it.
      expect(await stalledTeardown.result()).toEqual({ name: 'stalled' });
      // A repeat of the delete finds nothing: 404.
      expect((await tenant.api.delete('/environments/lost')).status).toBe(404);
    });
  });
});
