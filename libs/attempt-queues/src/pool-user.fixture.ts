import { createRequire } from 'node:module';
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type { AttemptJob } from '@envengine/contracts';
import { ATTEMPT_QUEUE_PREFIX, AttemptQueueProducer, attemptQueueKeyName, tenantAttemptQueue } from './attempt-queues.ts';
import { generatePoolPassword, PoolAclRegistry, poolRedisUsername, sha256Hex, type PoolUser } from './pool-acl.ts';
import { sendScriptsByShaOnly } from './pool-connection.ts';
import { startRedisChild, testId, type RedisChild } from './redis-child.fixture.ts';

/** A pool user as issued, with the password only its workers hold. */
export interface PoolCredentialForTest extends PoolUser {
  password: string;
}

/** A throwaway Redis set up as the placement-service keeps it for pools, and its administrator's clients. */
export interface PoolTestRedis {
  server: RedisChild;
  admin: Redis;
  registry: PoolAclRegistry;
  producer: AttemptQueueProducer;
  stop(): Promise<void>;
}

export async function startPoolTestRedis(): Promise<PoolTestRedis> {
  // As the attempt-worker does in --pool mode, before any client exists.
  sendScriptsByShaOnly();
  const server = await startRedisChild();
  const admin = new Redis(server.url, { maxRetriesPerRequest: null });
  const registry = new PoolAclRegistry(admin);
  const producer = new AttemptQueueProducer(admin);
  // What the placement-service does whenever Redis is ready: pool users may only EVALSHA these.
  await registry.loadWorkerScripts();
  // This process sends scripts by EVALSHA only (above), the producer's too: load BullMQ's other scripts.
  await loadEveryBullmqScript(admin);
  return {
    server,
    admin,
    registry,
    producer,
    stop: async () => {
      await producer.close();
      admin.disconnect();
      await server.stop();
    },
  };
}

/** Every BullMQ script into the server's cache: a process that sends scripts by EVALSHA only needs the producer's there too. */
export async function loadEveryBullmqScript(redis: Redis): Promise<void> {
  const scripts = createRequire(import.meta.url)('bullmq/dist/cjs/scripts/index.js') as Record<string, { content: string }>;
  for (const script of Object.values(scripts)) await redis.call('SCRIPT', 'LOAD', script.content);
}

export async function issuePoolUser(registry: PoolAclRegistry, tenantId: string): Promise<PoolCredentialForTest> {
  const password = generatePoolPassword();
  const user = { username: poolRedisUsername(testId('pcr')), passwordSha256: sha256Hex(password), tenantId };
  await registry.apply(user);
  return { ...user, password };
}

export function attemptJob(tenantId: string): AttemptJob {
  return { attempt_id: testId('att'), run_id: testId('run'), tenant_id: tenantId, dispatch: 0 };
}

/** The reply, or the error message: what the server (or a gate) said to the client. */
export async function replyTo(client: Redis, ...command: [string, ...(string | number | Buffer)[]]): Promise<string> {
  return client.call(...command).then(
    (value) => `allowed: ${JSON.stringify(value)}`,
    (error: Error) => error.message,
  );
}

/**
 * A BullMQ Worker on the tenant's queue over `connection`, as the attempt-worker runs one:
 * two attempts queued one after the other, the first succeeding and the second failing in
 * user code. What its processor saw, how each ended, and the Worker's own errors.
 */
export async function workTwoAttempts(connection: Redis, producer: AttemptQueueProducer, tenantId: string) {
  const seen: unknown[] = [];
  const worker = new Worker(attemptQueueKeyName(tenantAttemptQueue(tenantId)), async (job: Job) => {
    seen.push(job.data);
    if (seen.length === 2) throw new Error('user code failed');
    return 'done';
  }, { connection, prefix: ATTEMPT_QUEUE_PREFIX });
  const errors: string[] = [];
  worker.on('error', (error) => errors.push(error.message));
  try {
    const first = attemptJob(tenantId);
    const completed = new Promise<Job>((resolve) => worker.once('completed', resolve));
    await producer.enqueue(first, 'remote');
    const completedId = (await completed).id;
    const second = attemptJob(tenantId);
    const failed = new Promise<Error>((resolve) => worker.once('failed', (_job, error) => resolve(error)));
    await producer.enqueue(second, 'remote');
    const failure = (await failed).message;
    return { queued: [first, second], seen, completedId, failure, errors, left: await producer.counts(tenantAttemptQueue(tenantId)) };
  } finally {
    await worker.close();
  }
}
