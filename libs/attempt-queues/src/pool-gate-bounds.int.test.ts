import { connect, type Socket } from 'node:net';
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { pack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCommand, startRedisGate, type RedisGate } from '@envengine/redis-gate';
import { ATTEMPT_QUEUE_PREFIX, AttemptQueueProducer, attemptJobId, attemptQueueKeyBase, attemptQueueKeyName, tenantAttemptQueue } from './attempt-queues.ts';
import { POOL_USERNAME_PREFIX, PoolAclRegistry, poolWorkerScripts } from './pool-acl.ts';
import { poolRedisOptions } from './pool-connection.ts';
import { POOL_GATE_LIMITS, poolGatePolicy } from './pool-gate-policy.ts';
import { PoolMemoryBudget } from './pool-memory-budget.ts';
import { testId, type RedisChild } from './redis-child.fixture.ts';
import { attemptJob, issuePoolUser, replyTo, startPoolTestRedis, type PoolCredentialForTest, type PoolTestRedis } from './pool-user.fixture.ts';

/** One pool's Redis memory budget here: a few hundred KiB, so that a few jobs reach it. */
const BUDGET_BYTES = 512 * 1024;
/** Reply bytes one connection may leave unread here. */
const UNREAD_CAP = 64 * 1024;
let redis: PoolTestRedis;
let server: RedisChild;
let admin: Redis;
let registry: PoolAclRegistry;
let producer: AttemptQueueProducer;
let gate: RedisGate;
const opened: Array<{ disconnect(): void }> = [];

beforeAll(async () => {
  redis = await startPoolTestRedis();
  ({ server, admin, registry, producer } = redis);
  const budget = new PoolMemoryBudget({ redis: admin, bytesPerPool: BUDGET_BYTES, measureIntervalMs: 50, log: { warn: () => undefined } });
  gate = await startRedisGate({
    host: '127.0.0.1',
    port: 0,
    policy: poolGatePolicy({ redisVersion: '7.0.15', budget }),
    limits: POOL_GATE_LIMITS,
    acceptsUser: (username) => username.startsWith(POOL_USERNAME_PREFIX),
    nodeForSlot: () => `127.0.0.1:${server.port}`,
    cluster: false,
    maxConnections: 64,
    maxConnectionsPerUser: 16,
    authTimeoutMs: 5_000,
    maxBufferedReplyBytes: UNREAD_CAP,
    overBufferedTimeoutMs: 500,
    log: { info: () => undefined, warn: () => undefined },
  });
}, 10_000);

afterAll(async () => {
  for (const client of opened) client.disconnect();
  await gate?.close();
  await redis?.stop();
});

const gatePort = () => Number(gate.address.split(':').pop());

function gated(credential: PoolCredentialForTest): Redis {
  const connection = new Redis({ ...poolRedisOptions(`redis://127.0.0.1:${gatePort()}`, credential.username, credential.password), maxRetriesPerRequest: 0, retryStrategy: () => null });
  connection.on('error', () => undefined);
  opened.push(connection);
  return connection;
}

const script = (name: string) => poolWorkerScripts().find((entry) => entry.name === name)!;
const MOVE_TO_ACTIVE_KEYS = ['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', 'marker'];

/** bullmq 6.7's moveToActive as its Worker sends it, with its prefix and options changed at will. */
function moveToActive(base: string, change: { prefix?: string; opts?: Record<string, unknown> } = {}): [string, ...(string | Buffer | number)[]] {
  const opts = change.opts ?? { token: 'f3a5c0de-1111-4222-8333-944455556666:1', lockDuration: 30_000 };
  return ['EVALSHA', script('moveToActive').sha1, 11, ...MOVE_TO_ACTIVE_KEYS.map((key) => `${base}${key}`), change.prefix ?? base, Date.now(), pack(opts)];
}

/** A tenant with a pool user and one attempt waiting in its queue. */
async function tenantWithWaitingJob() {
  const tenant = testId('ten');
  const credential = await issuePoolUser(registry, tenant);
  const base = attemptQueueKeyBase(tenantAttemptQueue(tenant));
  const job = attemptJob(tenant);
  await producer.enqueue(job, 'remote');
  return { tenant, credential, base, jobId: attemptJobId(job) };
}

describe('the pool gate pins what a worker script may touch', { timeout: 20_000 }, () => {
  it("refuses a key prefix that is not the queue's own: nothing is made under it, and the job stays waiting", async () => {
    const { credential, base, jobId } = await tenantWithWaitingJob();
    const client = gated(credential);
    const fresh = `${base}fresh-1:`;
    expect(await replyTo(client, ...moveToActive(base, { prefix: fresh }))).toMatch(/^NOPERM the pool gate does not pass moveToActive with argument 1 refused: the key prefix must be the queue's own/);
    expect(await admin.exists(`${fresh}${jobId}`, `${fresh}${jobId}:lock`)).toBe(0);
    expect(await admin.llen(`${base}wait`)).toBe(1);
    // Positive control: with the queue's own prefix the same call takes the job, and locks it.
    expect(await replyTo(client, ...moveToActive(base))).toMatch(/^allowed: \[/);
    expect(await admin.get(`${base}${jobId}:lock`)).toBe('f3a5c0de-1111-4222-8333-944455556666:1');
  });

  it('refuses a huge lock token and an out-of-range lock duration: no lock is written', async () => {
    const { credential, base, jobId } = await tenantWithWaitingJob();
    const client = gated(credential);
    const huge = await replyTo(client, ...moveToActive(base, { opts: { token: 't'.repeat(200 * 1024), lockDuration: 30_000 } }));
    expect(huge).toMatch(/^NOPERM the pool gate does not pass moveToActive with argument 3 refused: options\.token: a lock token is 1 to 128 characters/);
    const forever = await replyTo(client, ...moveToActive(base, { opts: { token: 'w:1', lockDuration: 10 ** 10 } }));
    expect(forever).toMatch(/^NOPERM .*options\.lockDuration: must be an integer from 1000 to 120000/);
    expect(await admin.exists(`${base}${jobId}:lock`)).toBe(0);
    expect(await admin.llen(`${base}wait`)).toBe(1);
  });

  it("stops passing a connection's commands while it leaves its replies unread: pipelined INFO does not grow the gate's memory", async () => {
    const credential = await issuePoolUser(registry, testId('ten'));
    const CONNECTIONS = 10;
    const COMMANDS = 1000;
    const before = process.memoryUsage().arrayBuffers;
    const sockets: Socket[] = [];
    const closed: Array<Promise<void>> = [];
    for (let index = 0; index < CONNECTIONS; index++) {
      const socket = connect({ host: '127.0.0.1', port: gatePort() });
      // Never reads a reply.
      socket.pause();
      socket.on('error', () => undefined);
      closed.push(new Promise((resolve) => socket.once('close', () => resolve())));
      sockets.push(socket);
      const info = encodeCommand(['INFO', 'everything']);
      socket.write(Buffer.concat([encodeCommand(['AUTH', credential.username, credential.password]), ...Array.from({ length: COMMANDS }, () => info), encodeCommand(['CLIENT', 'SETNAME', `unread-${index}`])]));
    }
    try {
      // Evidence that the gate has handled every command: Redis has the name each connection set last.
      const names = async () => ((await admin.client('LIST')) as string).match(/name=unread-\d+/g)?.length ?? 0;
      for (const deadline = Date.now() + 15_000; (await names()) < CONNECTIONS && Date.now() < deadline; ) await new Promise((resolve) => setImmediate(resolve));
      expect(await names()).toBe(CONNECTIONS);
      // The gate's buffers once every command has been handled: looked at for half a second (replies still on their way arrive in it), or until over the bound.
      const BOUND = 4 * 1024 * 1024;
      let most = 0;
      for (const end = Date.now() + 500; Date.now() < end && most < BOUND; await new Promise((resolve) => setTimeout(resolve, 20))) {
        most = Math.max(most, process.memoryUsage().arrayBuffers - before);
      }
      if (process.env['GATE_PROBE_NUMBERS']) console.log({ arrayBuffersGrowth: most, buffered: (gate as { bufferedReplyBytes?: () => number }).bufferedReplyBytes?.() });
      expect(most).toBeLessThan(BOUND);
      expect(gate.bufferedReplyBytes()).toBeLessThanOrEqual(CONNECTIONS * (UNREAD_CAP + 64 * 1024));
    } finally {
      for (const socket of sockets) socket.destroy();
      await Promise.all(closed);
    }
  });

  it("refuses a pool's large writes once its queue holds its memory budget, and still passes small ones", async () => {
    const tenant = testId('ten');
    const credential = await issuePoolUser(registry, tenant);
    const base = attemptQueueKeyBase(tenantAttemptQueue(tenant));
    // Each job's return value (100 KB) stays in the queue's event stream after the job is removed.
    let returned = 'x'.repeat(100_000);
    const outcomes: string[] = [];
    const worker = new Worker(attemptQueueKeyName(tenantAttemptQueue(tenant)), async () => returned, { connection: gated(credential), prefix: ATTEMPT_QUEUE_PREFIX });
    worker.on('error', () => undefined);
    const ended = () =>
      new Promise<string>((resolve) => {
        worker.once('completed', () => resolve('completed'));
        worker.once('failed', (_job: Job | undefined, error: Error) => resolve(error.message));
      });
    try {
      for (let jobs = 0; jobs < 3 * (BUDGET_BYTES / 100_000) && !outcomes.some((outcome) => outcome.startsWith('OOM')); jobs++) {
        const end = ended();
        await producer.enqueue(attemptJob(tenant), 'remote');
        outcomes.push(await end);
      }
      const refused = outcomes.find((outcome) => outcome !== 'completed');
      expect(refused).toMatch(/^OOM the pool's queue holds about \d+ bytes in Redis and its budget is 524288 \(POOL_REDIS_MEMORY_BYTES\)/);
      expect(outcomes.filter((outcome) => outcome === 'completed').length).toBeGreaterThanOrEqual(3);
      // What the queue holds is its budget and at most one write more.
      const held = Number(await admin.call('MEMORY', 'USAGE', `${base}events`));
      if (process.env['GATE_PROBE_NUMBERS']) console.log({ outcomes: outcomes.map((outcome) => outcome.slice(0, 60)), held });
      expect(held).toBeLessThan(BUDGET_BYTES + 2 * POOL_GATE_LIMITS.maxArgumentBytes);
      // A job with a small return value still completes past the budget.
      returned = 'done';
      const end = ended();
      await producer.enqueue(attemptJob(tenant), 'remote');
      expect(await end).toBe('completed');
    } finally {
      await worker.close();
    }
  });
});
