import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pack } from 'msgpackr';
import { connectPoolRedis, POOL_GATE_LIMITS, poolWorkerScripts } from '@envengine/attempt-queues';
import { redisUrlList } from '@envengine/redis-connections';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ENVIRONMENT_RETIRED_CHANNEL, Run, WORKER_EXIT_CODES, type PoolCredentialIssued } from '@envengine/contracts';
import { freePort } from '@envengine/backing-servers';
import { createTenant, launchPoolWorker, startPoolWorker, until, type PoolWorker, type TestTenant } from '@envengine/test-harness';
import { redisServerHolding } from './redis-fixtures.ts';
import { deployRunsProject, issueCredential, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');

const setGate = (tenant: TestTenant, config: Record<string, unknown>) => tenant.api.put('/environments/prod/bindings/gate', { config });

async function waitForAttempt(tenant: TestTenant, runId: string, number: number, status: string): Promise<Run> {
  const response = await until(
    () => tenant.api.get(`/runs/${runId}`),
    (r) => r.body.data.attempts.some((attempt: { number: number; status: string }) => attempt.number === number && attempt.status === status),
    30_000,
    100,
  );
  return Run.parse(response.body.data);
}

function workerCall(token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  return fetch(`${stack.gatewayUrl}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(async (response) => ({ status: response.status, body: (await response.json()) as { error: { code: string } } }));
}

describe("remote attempts on a tenant's pool", () => {
  let tenant: TestTenant;
  let credential: PoolCredentialIssued;
  let bundleRef: string;
  const workers: PoolWorker[] = [];
  const mongo = new MongoClient(stack.mongoUrl);

  beforeAll(async () => {
    tenant = await createTenant(stack, 'pool');
    bundleRef = await deployRunsProject(tenant, join(stack.dataDir, 'lake', tenant.tenantId), 'remote');
    credential = await issueCredential(tenant);
  });

  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.process.stop()));
    await mongo.close();
  });

  it('says a remote attempt is waiting for a worker, then runs it on the pool', async () => {
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['orders', 'totals'] })).body.data);
    expect(run.waiting_for_worker).toBe(true);
    expect(run.attempts[0]).toMatchObject({ executor: 'remote', status: 'queued' });
    const idle = (await tenant.api.get('/pool')).body.data;
    expect(idle).toMatchObject({ queue: credential.queue, workers: [], attempts: { queued: 1, running: 0 } });

    workers.push(await startPoolWorker(stack, credential, 'w1'));
    const finished = await waitForRun(tenant, run.id);
    expect(finished.status).toBe('succeeded');
    expect(finished.waiting_for_worker).toBe(false);
    expect(finished.attempts[0]).toMatchObject({ executor: 'remote', worker: 'w1', status: 'succeeded' });
    const pool = (await tenant.api.get('/pool')).body.data;
    // Listed means live (GET /pool lists the workers whose last heartbeat is within the
    // lease): no bound on its age here, which a busy machine could stretch.
    expect(pool.workers.map((worker: { name: string }) => worker.name)).toEqual(['w1']);
    expect(pool.attempts).toEqual({ queued: 0, running: 0 });
  });

  it("keeps pools apart: a pool's Redis user and token reach only its own tenant", async () => {
    const other = await createTenant(stack, 'pool-other');
    await deployRunsProject(other, join(stack.dataDir, 'lake', other.tenantId), 'remote');
    const otherCredential = await issueCredential(other);
    const otherRun = Run.parse((await other.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data);
    const otherAttempt = otherRun.attempts[0]!.id;

    const redis = connectPoolRedis(stack.redisServerUrl, credential.redis, { maxRetriesPerRequest: 1 });
    try {
      const refused = async (...command: [string, ...string[]]) => (await redis.call(...command).then(() => 'allowed', (error: Error) => error.message)) as string;
      expect(await refused('LLEN', `envengine:{${otherCredential.queue}}:wait`)).toMatch(/NOPERM/);
      expect(await refused('GET', `envengine:{${otherCredential.queue}}:meta`)).toMatch(/NOPERM/);
      expect(await refused('KEYS', '*')).toMatch(/NOPERM/);
      expect(await refused('SCAN', '0')).toMatch(/NOPERM/);
      expect(await refused('FLUSHALL')).toMatch(/NOPERM/);
      expect(await refused('RANDOMKEY')).toMatch(/NOPERM/);
      expect(await refused('DBSIZE')).toMatch(/NOPERM/);
      // Of a cluster's commands, only what its client reads the layout with (never one that changes it).
      expect(await refused('CLUSTER', 'NODES')).toMatch(/NOPERM/);
      expect(await refused('CLUSTER', 'FAILOVER')).toMatch(/NOPERM/);
      expect(await refused('CLUSTER', 'RESET')).toMatch(/NOPERM/);
      // A forged retirement would make the engine's runner drop bundles from its cache.
      expect(await refused('PUBLISH', ENVIRONMENT_RETIRED_CHANNEL, JSON.stringify({ tenant_id: other.tenantId, environment_id: 'env_x' }))).toMatch(/NOPERM/);
      // Its own queue is reachable (positive control).
      expect(await refused('LLEN', `envengine:{${credential.queue}}:wait`)).toBe('allowed');
    } finally {
      redis.disconnect();
    }

    const start = await workerCall(credential.token, 'POST', `/worker/attempts/${otherAttempt}/start`, { worker: { id: 'intruder-1', name: 'intruder', executor: 'remote', concurrency: 1, sandbox: 'bwrap' } });
    expect([start.status, start.body.error.code]).toEqual([404, 'not_found']);
    expect((await workerCall(credential.token, 'GET', '/environments')).status).toBe(401);
    expect((await workerCall(tenant.token, 'POST', '/worker/heartbeat', { worker: { id: 'intruder-1', name: 'x', executor: 'remote', concurrency: 1, sandbox: 'bwrap' }, attempts: [] })).status).toBe(401);
    expect((await workerCall(otherCredential.token, 'GET', `/runs/${otherRun.id}`)).status).toBe(401);
    // The other tenant's run is untouched and still queued for its own pool.
    expect((await other.api.get(`/runs/${otherRun.id}`)).body.data.attempts[0].status).toBe('queued');

    // Revoking takes the token and the Redis user away together.
    const revoked = await tenant.api.request('DELETE', `/pool/credentials/${otherCredential.id}`);
    expect(revoked.status).toBe(404);
    const spare = await issueCredential(tenant);
    // One connection to the server of its queue (on a Redis Cluster, that key's master), whose end is seen.
    const spareQueueKey = `envengine:{${spare.queue}}:wait`;
    const probe = new Redis(await redisServerHolding(stack, spareQueueKey), { username: spare.redis.username, password: spare.redis.password, maxRetriesPerRequest: 1, retryStrategy: () => null });
    probe.on('error', () => undefined);
    expect(await probe.call('LLEN', spareQueueKey)).toBe(0);
    const closed = new Promise((resolve) => probe.once('end', resolve));
    expect((await tenant.api.request('DELETE', `/pool/credentials/${spare.id}`)).status).toBe(200);
    await until(() => workerCall(spare.token, 'POST', '/worker/heartbeat', { worker: { id: 'spare-123', name: 'x', executor: 'remote', concurrency: 1, sandbox: 'bwrap' }, attempts: [] }), (r) => r.status === 401, 10_000);
    // Redis closed the connection authenticated as the revoked user; on a new one AUTH is
    // refused and nothing runs after it (there is no open `default` user to fall back to).
    await closed;
    // One server (a Redis Cluster's first node: each node has the same users).
    const fresh = new Redis(redisUrlList(stack.redisServerUrl)[0]!, { lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 1, retryStrategy: () => null });
    fresh.on('error', () => undefined);
    await expect(fresh.call('AUTH', spare.redis.username, spare.redis.password)).rejects.toThrow(/WRONGPASS/);
    await expect(fresh.call('PING')).rejects.toThrow(/NOAUTH/);
    fresh.disconnect();
  });

  it("reaches its queues through the pool gate, which passes none of the plain commands Redis's ACL must give it", async () => {
    // The credential names the gate, not Redis; the workers of the tests above ran through it.
    expect(credential.redis.url).toBe(stack.poolGateUrl);
    const gated = connectPoolRedis(credential.redis.url!, credential.redis, { maxRetriesPerRequest: 1 });
    const direct = connectPoolRedis(stack.redisServerUrl, credential.redis, { maxRetriesPerRequest: 1 });
    const own = `envengine:{${credential.queue}}`;
    const answer = async (redis: typeof gated, ...command: readonly [string, ...(string | Buffer)[]]) => (await redis.call(...command).then(() => 'allowed', (error: Error) => error.message)) as string;
    try {
      for (const command of <Array<[string, ...string[]]>>[['SET', `${own}:junk`, 'x'.repeat(1024)], ['HSET', `${own}:junk-hash`, 'f', 'x'], ['LPUSH', `${own}:junk-list`, 'x']]) {
        // Positive control: Redis's own ACL lets the pool user write its keys (BullMQ's scripts need it).
        expect(await answer(direct, ...command), command[0]).toBe('allowed');
        expect(await answer(gated, ...command), command[0]).toMatch(/^NOPERM the pool gate does not pass/);
      }
      expect(await answer(gated, 'APPEND', `${own}:junk`, 'x')).toMatch(/^NOPERM the pool gate does not pass/);
      expect(await answer(gated, 'EVAL', 'return 1', '0')).toMatch(/^NOPERM the pool gate does not pass/);
      // What it does need passes: INFO, which its worker's ready check sends.
      expect(await answer(gated, 'INFO', 'server')).toBe('allowed');
      // A worker script's argument is bounded (a job's return value, here of a job that is not there): at the bound it reaches Redis, over it the gate hangs up.
      const moveToFinished = poolWorkerScripts().find((script) => script.name === 'moveToFinished')!;
      const job = 'att_0000000000000000000000000a';
      const keys = ['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', 'completed', job, 'metrics:completed', 'marker'].map((key) => `${own}:${key}`);
      const finishOptions = pack({ token: 'worker-1:1', keepJobs: { count: 0 }, lockDuration: 30_000, attempts: 1, maxMetricsSize: '' });
      const withArgument = (bytes: number) => ['EVALSHA', moveToFinished.sha1, '14', ...keys, job, String(Date.now()), 'returnvalue', Buffer.alloc(bytes, 'a'), 'completed', '0', `${own}:`, finishOptions, ''] as const;
      expect(await answer(gated, ...withArgument(POOL_GATE_LIMITS.maxArgumentBytes))).toBe('allowed');
      const oversized = await answer(gated, ...withArgument(POOL_GATE_LIMITS.maxArgumentBytes + 1));
      expect(oversized).toBe(`ERR an argument is at most ${POOL_GATE_LIMITS.maxArgumentBytes} bytes; the gate closes this connection`);
    } finally {
      await direct.del(`${own}:junk`, `${own}:junk-hash`, `${own}:junk-list`).catch(() => undefined);
      gated.disconnect();
      direct.disconnect();
    }
  });

  it('places a retry afresh: the first attempt local, the retry remote after a placement change', async () => {
    await setGate(tenant, { open: false, fail_attempt: 1 });
    expect((await tenant.api.post('/environments/prod/placement', { executor: 'local' })).status).toBe(200);
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['gated'], max_attempts: 2 })).body.data);
    await waitForAttempt(tenant, run.id, 1, 'running');
    expect((await tenant.api.post('/environments/prod/placement', { executor: 'remote' })).status).toBe(200);
    await setGate(tenant, { open: true, fail_attempt: 1 });
    const finished = await waitForRun(tenant, run.id);
    expect(finished.status).toBe('succeeded');
    expect(finished.attempts.map((attempt) => [attempt.number, attempt.executor, attempt.status])).toEqual([
      [1, 'local', 'failed'],
      [2, 'remote', 'succeeded'],
    ]);
    await setGate(tenant, { open: false });
  });

  it('marks an attempt lost when its worker is killed, retries it on a live worker, and refuses the dead worker\'s late writes', async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.process.stop()));
    const doomed = await startPoolWorker(stack, credential, 'doomed');
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['gated'], max_attempts: 2 })).body.data);
    await waitForAttempt(tenant, run.id, 1, 'running');
    const attempts = mongo.db(stack.databases['placement-service']).collection<{ _id: string; lease: string }>('attempts');
    const { lease } = (await attempts.findOne({ _id: run.attempts[0]!.id }))!;

    process.kill(doomed.process.pid!, 'SIGKILL');
    const lost = await waitForAttempt(tenant, run.id, 1, 'lost');
    expect(lost.attempts[0]!.error).toMatch(/doomed stopped reporting; last heartbeat at \d{4}-/);
    expect(lost.attempts[0]!.finished_at).not.toBeNull();

    const late = await workerCall(credential.token, 'POST', `/worker/attempts/${run.attempts[0]!.id}/finish`, { status: 'succeeded', assets: [] }, { 'x-attempt-lease': lease });
    expect([late.status, late.body.error.code]).toEqual([409, 'lease_superseded']);
    const lateLog = await workerCall(credential.token, 'POST', `/worker/attempts/${run.attempts[0]!.id}/logs`, { lines: [{ seq: 99, at: new Date().toISOString(), asset: null, message: 'late' }] }, { 'x-attempt-lease': lease });
    expect(lateLog.status).toBe(409);

    workers.push(await startPoolWorker(stack, credential, 'survivor'));
    await setGate(tenant, { open: true });
    const finished = await waitForRun(tenant, run.id);
    expect(finished.status).toBe('succeeded');
    expect(finished.attempts.map((attempt) => [attempt.number, attempt.status, attempt.worker])).toEqual([
      [1, 'lost', 'doomed'],
      [2, 'succeeded', 'survivor'],
    ]);
    await setGate(tenant, { open: false });
  });

  it('drains on SIGTERM: a running attempt past the deadline is handed back and finished by another worker', async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.process.stop()));
    const draining = await startPoolWorker(stack, credential, 'draining', { DRAIN_TIMEOUT_MS: '1000' });
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['gated'] })).body.data);
    await waitForAttempt(tenant, run.id, 1, 'running');
    await draining.process.stop(20_000);
    expect(draining.process.exitStatus).toMatchObject({ code: 0 });
    const handedBack = await waitForAttempt(tenant, run.id, 1, 'queued');
    expect(handedBack.status).toBe('running');
    expect(readFileSync(draining.logFile, 'utf8')).toContain('drain deadline passed');

    workers.push(await startPoolWorker(stack, credential, 'taker'));
    await setGate(tenant, { open: true });
    const finished = await waitForRun(tenant, run.id);
    expect(finished.status).toBe('succeeded');
    expect(finished.attempts.map((attempt) => [attempt.number, attempt.status, attempt.worker])).toEqual([[1, 'succeeded', 'taker']]);
    await setGate(tenant, { open: false });
  });

  it("drains on a SIGINT to its whole process group (a terminal's Ctrl-C): the running asset is not signalled and finishes, in one attempt", async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.process.stop()));
    const worker = await startPoolWorker(stack, credential, 'ctrl-c', { DRAIN_TIMEOUT_MS: '30000' });
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['gated'] })).body.data);
    await waitForAttempt(tenant, run.id, 1, 'running');
    // ManagedProcess starts the worker as a group leader: this is what the terminal sends on Ctrl-C.
    process.kill(-worker.process.pid!, 'SIGINT');
    await until(async () => readFileSync(worker.logFile, 'utf8'), (log) => log.includes('"stopping"'), 10_000, 50);
    await setGate(tenant, { open: true });
    const finished = await waitForRun(tenant, run.id);
    expect(finished.status, finished.error ?? '').toBe('succeeded');
    expect(finished.attempts.map((attempt) => [attempt.number, attempt.status, attempt.worker])).toEqual([[1, 'succeeded', 'ctrl-c']]);
    expect(await worker.process.waitForExit()).toBe(0);
    await setGate(tenant, { open: false });
  });

  it('stops at once on a second SIGINT to its group, handing the running attempt back (queued again, not lost)', async () => {
    const worker = await startPoolWorker(stack, credential, 'ctrl-c-twice', { DRAIN_TIMEOUT_MS: '60000' });
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['gated'] })).body.data);
    await waitForAttempt(tenant, run.id, 1, 'running');
    process.kill(-worker.process.pid!, 'SIGINT');
    await until(async () => readFileSync(worker.logFile, 'utf8'), (log) => log.includes('"stopping"'), 10_000, 50);
    process.kill(-worker.process.pid!, 'SIGINT');
    // Long before its 60 s drain would end.
    expect(await worker.process.waitForExit()).toBe(0);
    expect(readFileSync(worker.logFile, 'utf8')).toContain('stopping at once');
    const handedBack = await waitForAttempt(tenant, run.id, 1, 'queued');
    expect(handedBack.status).toBe('running');

    workers.push(await startPoolWorker(stack, credential, 'after-ctrl-c'));
    await setGate(tenant, { open: true });
    const finished = await waitForRun(tenant, run.id);
    expect(finished.status).toBe('succeeded');
    expect(finished.attempts.map((attempt) => [attempt.number, attempt.status, attempt.worker])).toEqual([[1, 'succeeded', 'after-ctrl-c']]);
    await setGate(tenant, { open: false });
  });

  it('caches a bundle by digest, and refuses a tampered cached copy and fetches it again', async () => {
    const [worker] = workers;
    const fetchedLines = () => readFileSync(worker!.logFile, 'utf8').split('\n').filter((line) => line.includes('"bundle fetched"')).length;
    const runOrders = async () => waitForRun(tenant, Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data).id);
    expect((await runOrders()).status).toBe('succeeded');
    const fetches = fetchedLines();
    expect((await runOrders()).status).toBe('succeeded');
    expect(fetchedLines()).toBe(fetches);

    const cached = join(worker!.bundleCacheDir, bundleRef.slice('sha256:'.length), 'assets', 'orders.js');
    writeFileSync(cached, "export default async () => { throw new Error('tampered code ran'); };");
    const afterTamper = await runOrders();
    expect(afterTamper.status).toBe('succeeded');
    expect(readFileSync(worker!.logFile, 'utf8')).toContain('failed its digest check');
    expect(fetchedLines()).toBe(fetches + 1);
  });

  describe('a pool worker as an operator runs it', () => {
    const logOf = (worker: { logFile: string }) => readFileSync(worker.logFile, 'utf8');
    const revoke = async (issued: PoolCredentialIssued) => expect((await tenant.api.request('DELETE', `/pool/credentials/${issued.id}`)).status).toBe(200);

    it('exits at once with code 77 and says why when its credential was revoked before it started', async () => {
      const issued = await issueCredential(tenant);
      await revoke(issued);
      const worker = launchPoolWorker(stack, issued, 'revoked-before');
      workers.push(worker as PoolWorker);
      expect(await worker.process.waitForExit()).toBe(WORKER_EXIT_CODES.credentialRefused);
      expect(logOf(worker)).toContain("refused this worker's pool credential: it was revoked or is not known to the engine");
      expect(logOf(worker)).not.toContain('attempt-worker ready');
    });

    it('exits with code 77 when its credential is revoked while it runs, instead of retrying forever', async () => {
      const issued = await issueCredential(tenant);
      const worker = await startPoolWorker(stack, issued, 'revoked-while-running');
      workers.push(worker);
      await revoke(issued);
      expect(await worker.process.waitForExit()).toBe(WORKER_EXIT_CODES.credentialRefused);
      const refusals = logOf(worker).split('\n').filter((line) => line.includes("refused this worker's pool credential"));
      expect(refusals).toHaveLength(1);
    });

    it('is neither ready nor counted live while it cannot reach Redis: a remote run says it waits for a worker', async () => {
      await Promise.all(workers.splice(0).map((worker) => worker.process.stop()));
      // The stopped workers count as live until their last heartbeat ages past the lease: wait for that.
      await until(() => tenant.api.get('/pool'), (response) => response.body.data.workers.length === 0, 30_000);
      const issued = await issueCredential(tenant);
      const port = await freePort();
      // A Redis address where nothing listens.
      const worker = launchPoolWorker(stack, issued, 'no-redis', { REDIS_URL: `redis://127.0.0.1:${await freePort()}`, PORT: String(port) });
      workers.push(worker as PoolWorker);
      await until(async () => logOf(worker), (text) => text.includes('cannot reach Redis'), 30_000);
      // Its health server answers once its heartbeats have started: it is up, and not ready.
      await until(() => fetch(`http://127.0.0.1:${port}/readyz`).then((response) => response.status, () => 0), (status) => status === 503, 30_000);
      const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data);
      const seen = Run.parse((await tenant.api.get(`/runs/${run.id}`)).body.data);
      expect(seen.waiting_for_worker).toBe(true);
      const pool = (await tenant.api.get('/pool')).body.data as { workers: Array<{ name: string; draining: boolean }> };
      expect(pool.workers.filter((entry) => entry.name === 'no-redis' && !entry.draining)).toEqual([]);
      expect(logOf(worker).split('\n').filter((line) => line.includes('cannot reach Redis'))).toHaveLength(1);
      // Cleaned up: the run is canceled, the worker stopped.
      expect((await tenant.api.post(`/runs/${run.id}/cancel`, {})).status).toBe(200);
      await worker.process.stop();
    });

    it('listens on a free health port unless told one, and stops at once on Ctrl-C with nothing running', async () => {
      const issued = await issueCredential(tenant);
      // Far longer than the test may take: an idle worker must not wait for any drain.
      const worker = launchPoolWorker(stack, issued, 'idle', { DRAIN_TIMEOUT_MS: '120000' });
      workers.push(worker as PoolWorker);
      const ready = await until(async () => logOf(worker), (text) => text.includes('attempt-worker ready'), 30_000);
      const port = (JSON.parse(ready.split('\n').find((line) => line.includes('attempt-worker ready'))!) as { port: number }).port;
      expect(port).toBeGreaterThan(0);
      expect(port).not.toBe(8085);
      // Started is not yet ready: its Redis connection may still be opening (seen under load: 503 at once).
      await until(() => fetch(`http://127.0.0.1:${port}/readyz`).then((response) => response.status), (status) => status === 200, 15_000);
      const listed = (response: { body: { data: { workers: Array<{ name: string }> } } }) => response.body.data.workers.some((entry) => entry.name === 'idle');
      await until(() => tenant.api.get('/pool'), listed, 15_000);
      process.kill(worker.process.pid!, 'SIGINT');
      expect(await worker.process.waitForExit()).toBe(0);
      expect(logOf(worker)).toContain('"msg":"stopped"');
      // It said goodbye: gone from the pool view at once, not when its heartbeat ages out.
      expect(logOf(worker)).toContain('stopped gracefully: left the pool');
      expect(listed(await tenant.api.get('/pool'))).toBe(false);
    }, 30_000);
  });
});
