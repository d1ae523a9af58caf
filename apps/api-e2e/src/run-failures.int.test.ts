import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startRedis, type BackingServer } from '@envengine/backing-servers';
import { Run } from '@envengine/contracts';
import { createTenant, startTestStack, until, type TestStack, type TestTenant } from '@envengine/test-harness';
import { deployRunsProject, RUN_TEST_SETTINGS } from './runs-fixtures.ts';

const shared = inject('stack');
const TERMINAL = new Set(['succeeded', 'failed', 'canceled']);

describe('runs through dependency and service restarts (a stack of its own)', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let restartedRedis: BackingServer | undefined;

  beforeAll(async () => {
    // Its own Redis (not persisted: a restart loses every queued job, the hardest case).
    // One of each whatever the profile: the test stops and restarts those processes. One
    // Redis server, not a cluster: the whole of it goes down (a cluster's master that dies
    // is redis-cluster.int.test.ts).
    // An asset may wait out a restart of the placement-service (the last test): a time limit far above one.
    stack = await startTestStack({ profile: 'embedded', replicas: 1, mongoUrl: shared.mongoUrl, temporalAddress: shared.temporalAddress, env: { ...RUN_TEST_SETTINGS, ASSET_TIMEOUT_MS: '30000' } });
    tenant = await createTenant(stack.info, 'run-failures');
    await deployRunsProject(tenant, join(stack.info.dataDir, 'lake'), 'local');
  });

  afterAll(async () => {
    await stack?.stop();
    await restartedRedis?.stop();
  });

  async function allTerminal(ids: string[]): Promise<Run[]> {
    // One list request per poll (not one per run), well inside the token's rate limit.
    const byId = async () => {
      const response = await tenant.api.get('/environments/prod/runs?limit=200');
      expect(response.status).toBe(200);
      const listed = new Map((response.body.data as unknown[]).map((run) => Run.parse(run)).map((run) => [run.id, run]));
      return ids.map((id) => listed.get(id)!);
    };
    await until(byId, (list) => list.every((run) => run !== undefined && TERMINAL.has(run.status)), 60_000, 250);
    // Each in full (the list may abridge attempts).
    return Promise.all(ids.map(async (id) => Run.parse((await tenant.api.get(`/runs/${id}`)).body.data)));
  }

  it('answers 503 while Redis is down, and every run created before ends once after it returns', async () => {
    // The gate: no runner takes anything, so all 20 are provably still queued when Redis
    // (not persisted) goes down with their jobs; only the dispatcher's reconciler can
    // offer them again.
    await stack.services.processes['attempt-worker'].stop();
    const ids: string[] = [];
    for (let i = 0; i < 20; i += 1) ids.push(Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data).id);
    const queued = await Promise.all(ids.map(async (id) => Run.parse((await tenant.api.get(`/runs/${id}`)).body.data)));
    expect(queued.map((run) => [run.status, run.attempts.map((attempt) => attempt.status)])).toEqual(ids.map(() => ['queued', ['queued']]));
    const port = Number(new URL(stack.servers.redis.url).port);
    await stack.servers.redis.stop();

    const down = await until(() => tenant.api.post('/environments/prod/runs', { assets: ['orders'] }), (r) => r.status === 503, 15_000);
    expect(down.body.error.code).toBe('unavailable');
    const listed = (await tenant.api.get('/environments/prod/runs?limit=200')).body.data as Run[];
    expect(listed).toHaveLength(20);

    restartedRedis = await startRedis({ dataDir: stack.info.dataDir, port, persist: false, acl: stack.servers.redisAcl, maxMemoryMb: stack.servers.redisMaxMemoryMb, report: () => undefined });
    await stack.services.restart('attempt-worker');
    const runs = await allTerminal(ids);
    expect(runs.map((run) => run.status)).toEqual(ids.map(() => 'succeeded'));
    // No attempt ran twice: one attempt per run, and one materialization per run.
    expect(runs.every((run) => run.attempts.length === 1)).toBe(true);
    const mongo = new MongoClient(shared.mongoUrl);
    try {
      const materializations = mongo.db(stack.info.databases['deployment-service']).collection('materializations');
      expect(await materializations.countDocuments({ run_id: { $in: ids } })).toBe(20);
    } finally {
      await mongo.close();
    }
    expect((await tenant.api.post('/environments/prod/runs', { assets: ['orders'] })).status).toBe(201);
  });

  it('loses nothing when the placement-service restarts while attempts run', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push(Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['gated'] })).body.data).id);
    await until(
      () => Promise.all(ids.map(async (id) => (await tenant.api.get(`/runs/${id}`)).body.data.attempts[0].status)),
      (statuses) => statuses.every((status) => status === 'running'),
      30_000,
    );
    await stack.services.restart('placement-service', RUN_TEST_SETTINGS);
    await tenant.api.put('/environments/prod/bindings/gate', { config: { open: true } });
    const runs = await allTerminal(ids);
    expect(runs.map((run) => [run.status, run.attempts.length])).toEqual(ids.map(() => ['succeeded', 1]));
  });
});
