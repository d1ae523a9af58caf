import { Worker, type Job } from 'bullmq';
import { keySlot } from '@envengine/redis-gate';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTEMPT_QUEUE_PREFIX, AttemptQueueProducer, LOCAL_ATTEMPT_QUEUE, tenantAttemptQueue, attemptQueueKeyName } from './attempt-queues.ts';
import type { AttemptJob } from '@envengine/contracts';
import { startRedisChild, testId, type RedisChild } from './redis-child.fixture.ts';

let server: RedisChild;
let admin: Redis;
let producer: AttemptQueueProducer;

beforeAll(async () => {
  server = await startRedisChild();
  admin = new Redis(server.url, { maxRetriesPerRequest: null });
  producer = new AttemptQueueProducer(admin);
}, 10_000);

afterAll(async () => {
  await producer?.close();
  admin?.disconnect();
  await server?.stop();
});

function attemptJob(tenantId: string): AttemptJob {
  return { attempt_id: testId('att'), run_id: testId('run'), tenant_id: tenantId, dispatch: 0 };
}

describe('AttemptQueueProducer', { timeout: 10_000 }, () => {
  it('adds an attempt once, however often it is enqueued, under its attempt id', async () => {
    const tenant = testId('ten');
    const job = attemptJob(tenant);
    expect(await producer.enqueue(job, 'remote')).toBe(job.attempt_id);
    expect(await producer.enqueue(job, 'remote')).toBe(job.attempt_id);
    expect(await producer.counts(tenantAttemptQueue(tenant))).toEqual({ waiting: 1, active: 0 });
    expect(await admin.lrange(`${ATTEMPT_QUEUE_PREFIX}:${attemptQueueKeyName(tenantAttemptQueue(tenant))}:wait`, 0, -1)).toEqual([job.attempt_id]);
    // A hand-back is a new job: the old one may still be finishing.
    await producer.enqueue({ ...job, dispatch: 1 }, 'remote');
    expect(await producer.counts(tenantAttemptQueue(tenant))).toEqual({ waiting: 2, active: 0 });
  });

  it('adds many attempts in one call, each to its own queue, once each, and checks every payload first', async () => {
    const [first, second] = [testId('ten'), testId('ten')];
    const jobs = [attemptJob(first), attemptJob(first), attemptJob(second)];
    const entries = jobs.map((job) => ({ job, executor: 'remote' as const }));
    expect(await producer.enqueueMany(entries)).toEqual(jobs.map((job) => job.attempt_id));
    expect(await producer.enqueueMany(entries)).toEqual(jobs.map((job) => job.attempt_id));
    expect(await producer.counts(tenantAttemptQueue(first))).toEqual({ waiting: 2, active: 0 });
    expect(await producer.counts(tenantAttemptQueue(second))).toEqual({ waiting: 1, active: 0 });
    const third = testId('ten');
    await expect(producer.enqueueMany([{ job: attemptJob(third), executor: 'remote' }, { job: { ...attemptJob(third), token: 'x' } as AttemptJob, executor: 'remote' }])).rejects.toThrow();
    expect(await producer.counts(tenantAttemptQueue(third))).toEqual({ waiting: 0, active: 0 });
  });

  it("puts local attempts on the engine's queue, with ids only and no BullMQ retry", async () => {
    const job = attemptJob(testId('ten'));
    await producer.enqueue(job, 'local');
    const stored = await admin.hgetall(`${ATTEMPT_QUEUE_PREFIX}:${attemptQueueKeyName(LOCAL_ATTEMPT_QUEUE)}:${job.attempt_id}`);
    expect(JSON.parse(stored['data']!)).toEqual(job);
    expect(JSON.parse(stored['opts']!)).toMatchObject({ attempts: 1 });
    expect(await producer.remove(job, 'local')).toBe(true);
  });

  it('refuses a payload that is not an AttemptJob', async () => {
    const job = attemptJob(testId('ten'));
    await expect(producer.enqueue({ ...job, token: 'secret' } as AttemptJob, 'remote')).rejects.toThrow();
    await expect(producer.counts('deployments')).rejects.toThrow(/not an attempt queue/);
  });

  it('removes a waiting job, leaves a taken one, and takes a missing one as removed', async () => {
    const tenant = testId('ten');
    const queue = tenantAttemptQueue(tenant);
    const [waiting, taken] = [attemptJob(tenant), attemptJob(tenant)];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const worker = new Worker(attemptQueueKeyName(queue), () => held, { connection: admin.duplicate(), prefix: ATTEMPT_QUEUE_PREFIX, autorun: false });
    try {
      await producer.enqueue(taken, 'remote');
      const active = new Promise<Job>((resolve) => worker.once('active', resolve));
      void worker.run();
      expect((await active).id).toBe(taken.attempt_id);
      await producer.enqueue(waiting, 'remote');
      expect(await producer.counts(queue)).toEqual({ waiting: 1, active: 1 });

      expect(await producer.remove(waiting, 'remote')).toBe(true);
      expect(await producer.remove(taken, 'remote')).toBe(false);
      expect(await producer.remove(attemptJob(tenant), 'remote')).toBe(true);
      expect(await producer.counts(queue)).toEqual({ waiting: 0, active: 1 });
    } finally {
      release();
      await worker.close();
    }
  });

  it("keeps every key of a queue in one Redis Cluster slot, so that BullMQ's scripts run on Redis Cluster", async () => {
    const tenant = testId('ten');
    const queue = tenantAttemptQueue(tenant);
    // Every kind of key a queue gets here: waiting, taken, completed and failed jobs (removed at their end), events, meta, ids.
    const [completes, fails, waits] = [attemptJob(tenant), attemptJob(tenant), attemptJob(tenant)];
    const worker = new Worker(
      attemptQueueKeyName(queue),
      async (job: Job) => {
        if (job.id === fails.attempt_id) throw new Error('failing on purpose');
      },
      { connection: admin.duplicate(), prefix: ATTEMPT_QUEUE_PREFIX, autorun: false },
    );
    try {
      const ended = new Promise<void>((resolve) => {
        let count = 0;
        const one = () => (count += 1) === 2 && resolve();
        worker.on('completed', one);
        worker.on('failed', one);
      });
      await producer.enqueue(completes, 'remote');
      await producer.enqueue(fails, 'remote');
      void worker.run();
      await ended;
      await worker.pause();
      await producer.enqueue(waits, 'remote');
    } finally {
      await worker.close();
    }
    const keys = await admin.keys(`${ATTEMPT_QUEUE_PREFIX}:*${tenant}*`);
    expect(keys.length).toBeGreaterThanOrEqual(4);
    expect(keys.every((key) => key.startsWith(`${ATTEMPT_QUEUE_PREFIX}:{${queue}}:`))).toBe(true);
    expect(new Set(keys.map((key) => keySlot(key))).size).toBe(1);
    // Control: the same keys without the hash tag fall in several slots.
    expect(new Set(keys.map((key) => keySlot(key.replace(/[{}]/g, '')))).size).toBeGreaterThan(1);
  });
});
