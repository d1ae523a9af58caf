import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Environment, PoolCredentialIssued, Quotas, Run } from '@envengine/contracts';
import { setTenantQuotas } from '@envengine/dev-stack';
import { PlacementClient } from '@envengine/service-clients';
import {
  activationWindows,
  ApiClient,
  createTenant,
  deployProject,
  manifestOf,
  overlappingWindows,
  startTestStack,
  until,
  type TestStack,
  type TestTenant,
} from '@envengine/test-harness';
import { RUN_TEST_SETTINGS, waitForRun } from './runs-fixtures.ts';
import { insertDueSchedules, storedSchedulesOf } from './schedule-fixtures.ts';

const shared = inject('stack');

/** Runs raced through two of everything: the issue's figure. */
const RUNS = 1000;
const IN_FLIGHT = 20;

/** The sum of one series' samples (all label values) in a Prometheus exposition. */
function total(exposition: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const labelText = match[2] ?? '';
    if (Object.entries(labels).every(([key, value]) => labelText.includes(`${key}="${value}"`))) sum += Number(match[3]);
  }
  return sum;
}

describe('two replicas of every deployable (a stack of its own)', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let mongo: MongoClient;

  const replicaUrls = (name: keyof TestStack['services']['replicaUrls']) => stack.services.replicaUrls[name];
  const scrapeAll = async (name: keyof TestStack['services']['replicaUrls']) =>
    Promise.all(replicaUrls(name).map(async (url) => (await fetch(`${url}/metrics`)).text()));
  /** The tenant's API through each gateway, taken in turn by index. */
  const throughGateway = (index: number) => new ApiClient(`${replicaUrls('gateway')[index % replicaUrls('gateway').length]}/api/v1`, tenant.token);

  beforeAll(async () => {
    stack = await startTestStack({
      mongoUrl: shared.mongoUrl,
      temporalAddress: shared.temporalAddress,
      replicas: 2,
      // The thousand runs come from one token; each gateway keeps its own buckets.
      // The default lease (15 s) and a long asset limit: 1,000 runs on a busy two-core machine
      // must not fail for a runner starved of CPU for four seconds (2 of 1,000 did in a CI
      // run with the suite's 4 s lease and limit); the lost-worker test waits for the lease.
      env: { ...RUN_TEST_SETTINGS, ATTEMPT_LEASE_TTL_MS: '15000', ASSET_TIMEOUT_MS: '60000', RATE_LIMIT_PER_SECOND: '5000', RATE_LIMIT_BURST: '5000',
        // Token lookups cached for ten minutes: a revocation that reaches the other gateway within the test did so by its broadcast, not by the cache running out.
        AUTH_CACHE_TTL_MS: '600000',
      },
    });
    tenant = await createTenant(stack.info, 'replicas');
    mongo = await new MongoClient(stack.info.mongoUrl).connect();
    await deployProject(tenant.api, {
      environment: 'prod',
      storagePrefix: `file://${join(stack.info.dataDir, 'lake', 'replicas')}`,
      executor: 'local',
      bindings: { warehouse: {} },
      files: { 'assets/empty.js': 'export default async () => {};' },
      manifest: { ...manifestOf([{ key: 'empty' }]), schedules: [] },
    });
  });

  afterAll(async () => {
    await mongo?.close();
    await stack?.stop();
  });

  it('runs two of each, and each gateway balances its calls across both replicas of a service', async () => {
    for (const name of ['gateway', 'placement-service', 'deployment-service', 'secrets-service', 'workflow-worker', 'attempt-worker'] as const) {
      expect(stack.services.replicas[name].filter((replica) => replica.running), name).toHaveLength(2);
    }
    const environmentGets = async () =>
      (await scrapeAll('placement-service')).map((text) => total(text, 'envengine_http_request_duration_seconds_count', { route: '/api/v1/environments/:param', method: 'GET', status: '200' }));
    const bindingLists = async () =>
      (await scrapeAll('secrets-service')).map((text) => total(text, 'envengine_http_request_duration_seconds_count', { route: '/api/v1/environments/:param/bindings', method: 'GET', status: '200' }));
    const [environmentsBefore, bindingsBefore] = [await environmentGets(), await bindingLists()];
    for (let i = 0; i < 40; i++) {
      expect((await throughGateway(i).get('/environments/prod')).status).toBe(200);
      expect((await throughGateway(i).get('/environments/prod/bindings')).status).toBe(200);
    }
    // Each gateway takes a service's replicas in turn: of its 20 calls, 10 reach either
    // replica. The secrets-services' own calls for the environment split alike.
    const delta = (after: number[], before: number[]) => after.map((count, index) => count - before[index]!);
    expect(delta(await bindingLists(), bindingsBefore)).toEqual([20, 20]);
    const environments = delta(await environmentGets(), environmentsBefore);
    expect(environments[0]).toBeGreaterThanOrEqual(20);
    expect(environments[1]).toBe(environments[0]);
  });

  it('a token revoked through one gateway is refused by both at once, though both had it cached', async () => {
    const minted = await throughGateway(0).post('/tokens', { name: 'short-lived', role: 'viewer' });
    expect(minted.status, minted.text).toBe(201);
    const token = minted.body.data.token as string;
    const through = (index: number) => throughGateway(index).withToken(token);
    // Each gateway looks the token up once and caches it (for ten minutes here).
    for (const index of [0, 1]) expect((await through(index).get('/environments')).status).toBe(200);

    expect((await throughGateway(1).delete(`/tokens/${minted.body.data.id}`)).status).toBe(200);
    // The gateway that revoked it refuses it at once; the other as soon as the broadcast arrives.
    expect((await through(1).get('/environments')).status).toBe(401);
    const other = await until(() => through(0).get('/environments'), (response) => response.status === 401, 20_000, 50);
    expect(other.status).toBe(401);
  });

  it('holds a quota across both gateways and both placement-services, and both gateways show the same use', async () => {
    const racer = await createTenant(stack.info, 'replicas-quota');
    const { databases } = stack.info;
    await setTenantQuotas(stack.info.mongoUrl, { placement: databases['placement-service'], deployment: databases['deployment-service'], secrets: databases['secrets-service'] }, racer.tenantId, { environments: 3 });
    const through = (index: number) => new ApiClient(`${replicaUrls('gateway')[index % 2]}/api/v1`, racer.token);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        through(index).post('/environments', { name: `quota-${index}`, storage_prefix: `file://${join(stack.info.dataDir, 'lake', 'quota', String(index))}`, executor: 'local' }),
      ),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 201, 201, 429, 429, 429, 429, 429, 429, 429]);
    const shown = await Promise.all([0, 1].map(async (index) => Quotas.parse((await through(index).get('/quotas')).body.data).environments));
    expect(shown).toEqual([{ limit: 3, used: 3 }, { limit: 3, used: 3 }]);
  });

  it('keeps answering while one replica of a service is down: the refused connection goes to the other', async () => {
    const second = stack.services.replicas['placement-service'][1]!;
    await second.stop();
    try {
      const answers: number[] = [];
      for (let i = 0; i < 30; i++) {
        answers.push((await throughGateway(i).get('/environments/prod')).status);
        // A POST too: a refused connection carried nothing, so it is safe to send elsewhere.
        answers.push((await throughGateway(i).post('/environments', { name: `spare-${i}`, storage_prefix: `file://${join(stack.info.dataDir, 'lake', `spare-${i}`)}`, executor: 'local' })).status);
      }
      expect(answers.filter((status) => status !== 200 && status !== 201)).toEqual([]);
      // The deployment-service reaches the placement-service the same way (an internal client).
      const deployed = await throughGateway(0).get('/environments/prod/deployments');
      expect(deployed.status).toBe(200);
    } finally {
      await stack.services.restart('placement-service', undefined, 1);
    }
    const listed = await tenant.api.get('/environments');
    expect(listed.body.data.filter((environment: Environment) => environment.name.startsWith('spare-'))).toHaveLength(30);
  });

  it(`gives each of ${RUNS} runs made through both gateways exactly one attempt, run once, and one terminal state`, { timeout: 600_000 }, async () => {
    const environmentId = Environment.parse((await tenant.api.get('/environments/prod')).body.data).id;
    const created: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        for (let index = next++; index < RUNS; index = next++) {
          const response = await throughGateway(index).post('/environments/prod/runs', { assets: ['empty'] });
          expect(response.status, response.text).toBe(201);
          created.push(Run.parse(response.body.data).id);
        }
      }),
    );
    expect(new Set(created).size).toBe(RUNS);
    const db = mongo.db(stack.info.databases['placement-service']);
    const runs = db.collection<{ _id: string; status: string }>('runs');
    const attempts = db.collection<{ _id: string; run_id: string; status: string }>('attempts');
    // Evidence, not time: every run has reached a terminal state.
    await until(
      () => runs.countDocuments({ tenant_id: tenant.tenantId, environment_id: environmentId, status: { $in: ['succeeded', 'failed', 'canceled'] } }),
      (count) => count === RUNS,
      540_000,
      500,
    );
    const byStatus = await runs.aggregate<{ _id: string; count: number }>([{ $match: { tenant_id: tenant.tenantId, environment_id: environmentId } }, { $group: { _id: '$status', count: { $sum: 1 } } }]).toArray();
    // What went wrong with any run that did not succeed, for the failure message.
    const unsuccessful = await attempts
      .find({ tenant_id: tenant.tenantId, run_id: { $in: created }, status: { $ne: 'succeeded' } }, { projection: { run_id: 1, status: 1, error: 1, worker: 1 } })
      .limit(5)
      .toArray();
    expect(byStatus, JSON.stringify(unsuccessful)).toEqual([{ _id: 'succeeded', count: RUNS }]);
    const perRun = await attempts
      .aggregate<{ _id: string; attempts: number; statuses: string[] }>([
        { $match: { tenant_id: tenant.tenantId, run_id: { $in: created } } },
        { $group: { _id: '$run_id', attempts: { $sum: 1 }, statuses: { $push: '$status' } } },
      ])
      .toArray();
    expect(perRun).toHaveLength(RUNS);
    expect(perRun.filter((run) => run.attempts !== 1 || run.statuses[0] !== 'succeeded')).toEqual([]);

    // Each run finished once: the two placement-services counted RUNS ends between them, and
    // the two runners RUNS executions that started (each ran some), no more. A job offered
    // again by a reconciler just as its attempt ran (the re-offer of a queued attempt races
    // its start) reaches a runner whose start is refused: counted as `refused`, never run.
    /** One series on each replica of a deployable, once their sum has reached RUNS (counters move just after what they count). */
    const perReplicaOnceAll = (name: 'placement-service' | 'attempt-worker', metric: string, labels: Record<string, string>) =>
      until(async () => (await scrapeAll(name)).map((text) => total(text, metric, labels)), (counts) => counts.reduce((a, b) => a + b, 0) >= RUNS, 10_000, 100);
    const ended = await perReplicaOnceAll('placement-service', 'envengine_runs_finished_total', { trigger: 'manual' });
    expect(ended.reduce((a, b) => a + b, 0)).toBe(RUNS);
    const executed = await perReplicaOnceAll('attempt-worker', 'envengine_worker_attempts_total', { result: 'succeeded' });
    expect(executed.reduce((a, b) => a + b, 0)).toBe(RUNS);
    expect(executed.every((count) => count > 0), `executions per runner: ${executed.join(', ')}`).toBe(true);
    const runners = await scrapeAll('attempt-worker');
    const byResult = (result: string) => runners.reduce((sum, text) => sum + total(text, 'envengine_worker_attempts_total', { result }), 0);
    expect({ failed: byResult('failed'), superseded: byResult('superseded'), released: byResult('released') }).toEqual({ failed: 0, superseded: 0, released: 0 });
    console.info(`replicas: ${RUNS} runs; executions per runner ${executed.join(' + ')}; re-offered jobs refused at start: ${byResult('refused')}`);
  });

  it('makes one run per tick and records it once when a pass of the same shard runs on both placement-services at once', async () => {
    const clients = replicaUrls('placement-service').map((url) => new PlacementClient({ origins: [url], credential: stack.info.internalCredential }));
    const environmentId = Environment.parse((await tenant.api.get('/environments/prod')).body.data).id;
    const database = stack.info.databases['placement-service'];
    try {
      // Forty schedules due now, each its own (no tick is skipped for a predecessor's overlap).
      const names = Array.from({ length: 40 }, (_, tick) => `raced-${tick}`);
      await insertDueSchedules(mongo, database, { tenantId: tenant.tenantId, environmentId, names, job: 'all', cron: '0 3 * * *', dueAt: new Date(Date.now() - 1000) });
      const passes = await Promise.all(clients.map((client) => client.tickSchedules(0)));
      // Between the two passes (and the shard's own loop), each tick is recorded once.
      const stored = await storedSchedulesOf(mongo, database, environmentId);
      for (const name of names) expect([name, stored.get(name)?.ticks]).toEqual([name, { run_created: 1 }]);
      expect(passes.reduce((sum, pass) => sum + pass.outcomes.run_created, 0)).toBeLessThanOrEqual(40);
      const runs = mongo.db(database).collection('runs');
      const perTick = await runs
        .aggregate<{ _id: string; count: number }>([
          { $match: { tenant_id: tenant.tenantId, environment_id: environmentId, schedule: /^raced-/ } },
          { $group: { _id: '$schedule', count: { $sum: 1 } } },
        ])
        .toArray();
      expect(perTick).toHaveLength(40);
      expect(perTick.filter((tick) => tick.count !== 1)).toEqual([]);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
  });

  it('marks an attempt whose worker fell silent lost once, with a lease reaper in each placement-service', async () => {
    const lostBefore = (await scrapeAll('placement-service')).reduce((sum, text) => sum + total(text, 'envengine_attempts_lost_total'), 0);
    expect((await tenant.api.post('/environments', { name: 'silent', storage_prefix: `file://${join(stack.info.dataDir, 'lake', 'silent')}`, executor: 'remote' })).status).toBe(201);
    expect((await tenant.api.put('/environments/silent/bindings/warehouse', {})).status).toBe(201);
    const bundleRef = (await tenant.api.get('/environments/prod/deployments')).body.data[0].bundle_ref as string;
    expect((await tenant.api.post('/environments/silent/deployments', { manifest: { ...manifestOf([{ key: 'empty' }]), schedules: [] }, bundle_ref: bundleRef })).status).toBe(201);
    const issued = await tenant.api.post('/pool/credentials', { label: 'silent' });
    const pool = throughGateway(1).withToken(PoolCredentialIssued.parse(issued.body.data).token);
    const abandoned = Run.parse((await tenant.api.post('/environments/silent/runs', { assets: ['empty'] })).body.data);
    const started = await pool.post(`/worker/attempts/${abandoned.attempts[0]!.id}/start`, { worker: { id: 'silent-1', name: 'silent', executor: 'remote', concurrency: 1, sandbox: 'bwrap' } });
    expect(started.status).toBe(200);
    // The worker never reports again: its lease runs out (15 s here) and a reaper marks it.
    const lost = await waitForRun(tenant, abandoned.id, 60_000);
    expect([lost.status, lost.attempts.map((attempt) => attempt.status)]).toEqual(['failed', ['lost']]);
    const counted = await until(
      async () => (await scrapeAll('placement-service')).reduce((sum, text) => sum + total(text, 'envengine_attempts_lost_total'), 0) - lostBefore,
      (count) => count >= 1,
      10_000,
      100,
    );
    // Both reapers ran their sweeps since (evidence: two more of each one's intervals pass
    // with the lease long expired); still one loss between them.
    const sweepsOf = async () => (await scrapeAll('placement-service')).map((text) => total(text, 'envengine_sweeps_total', { sweep: 'reap', outcome: 'completed' }));
    const sweepsAfterLoss = await sweepsOf();
    const sweptSince = await until(sweepsOf, (now) => now.every((count, index) => count >= sweepsAfterLoss[index]! + 2), 30_000, 100);
    expect(sweptSince.every((count, index) => count >= sweepsAfterLoss[index]! + 2), `reap sweeps ${sweepsAfterLoss.join(',')} -> ${sweptSince.join(',')}`).toBe(true);
    const lostAfter = (await scrapeAll('placement-service')).reduce((sum, text) => sum + total(text, 'envengine_attempts_lost_total'), 0) - lostBefore;
    expect([counted, lostAfter]).toEqual([1, 1]);
  });

  it('serializes concurrent activations of one environment sent through both gateways, with two workflow-workers', async () => {
    const bundleRef = (await tenant.api.get('/environments/prod/deployments')).body.data[0].bundle_ref as string;
    const environmentId = Environment.parse((await tenant.api.get('/environments/prod')).body.data).id;
    const ids: string[] = [];
    for (const sha of ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']) {
      const response = await tenant.api.post('/environments/prod/deployments', {
        manifest: { ...manifestOf([{ key: 'empty' }]), schedules: [] },
        bundle_ref: bundleRef,
        git: { branch: 'main', sha },
        activate: false,
      });
      expect(response.status).toBe(201);
      ids.push(response.body.data.id);
    }
    const results = await Promise.all(ids.map((id, index) => throughGateway(index).post(`/deployments/${id}/activate`, {})));
    expect(results.map((result) => result.status)).toEqual(ids.map(() => 200));
    const windows = (await activationWindows(stack.info.temporalAddress, [`activations-${environmentId}`], ['activate'])).filter((window) => ids.includes(window.deploymentId));
    expect(windows.map((window) => window.deploymentId).sort()).toEqual([...ids].sort());
    expect(overlappingWindows(windows)).toEqual([]);
    const active = (await tenant.api.get('/environments/prod/deployments?active=true')).body.data;
    expect(active).toHaveLength(1);
    expect(ids).toContain(active[0].id);
  });

  it("shares each token's rate limit between the gateways: two gateways let a token through at its rate, not twice it", async () => {
    const limits = { RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '10' };
    await Promise.all(replicaUrls('gateway').map((_, replica) => stack.services.restart('gateway', limits, replica)));
    try {
      // A new token: its bucket is full (10), and refills one a second.
      const limited = await createTenant(stack.info, 'rate-shared');
      const began = Date.now();
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) {
        const gateway = replicaUrls('gateway')[i % 2]!;
        statuses.push((await new ApiClient(`${gateway}/api/v1`, limited.token).get('/environments')).status);
      }
      const seconds = (Date.now() - began) / 1000;
      expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([]);
      // Each gateway with a bucket of its own would let 20 through.
      const allowed = statuses.filter((status) => status === 200).length;
      expect(allowed).toBeGreaterThanOrEqual(10);
      expect(allowed, `${allowed} let through in ${seconds.toFixed(2)} s`).toBeLessThanOrEqual(10 + Math.ceil(seconds));

      // All at once: requests waiting on one gateway's call to Redis share what it took.
      const concurrent = await createTenant(stack.info, 'rate-concurrent');
      const startedAt = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 30 }, (_, i) => new ApiClient(`${replicaUrls('gateway')[i % 2]}/api/v1`, concurrent.token).get('/environments')),
      );
      const took = (Date.now() - startedAt) / 1000;
      const passed = answers.filter((answer) => answer.status === 200).length;
      expect(answers.filter((answer) => answer.status !== 200 && answer.status !== 429)).toEqual([]);
      expect(passed).toBeGreaterThanOrEqual(10);
      expect(passed, `${passed} let through at once in ${took.toFixed(2)} s`).toBeLessThanOrEqual(10 + Math.ceil(took));
    } finally {
      await Promise.all(replicaUrls('gateway').map((_, replica) => stack.services.restart('gateway', {}, replica)));
    }
  });
});
