import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ATTEMPT_QUEUE_PREFIX, AttemptQueueProducer, tenantAttemptQueue, attemptQueueKeyName } from './attempt-queues.ts';
import { generatePoolPassword, PoolAclRegistry, poolRedisUsername, poolWorkerScripts, reapplyOnReady, sha256Hex, type PoolUser } from './pool-acl.ts';
import { poolRedisOptions } from './pool-connection.ts';
import { testId, type RedisChild } from './redis-child.fixture.ts';
import { attemptJob, issuePoolUser, loadEveryBullmqScript, replyTo, startPoolTestRedis, workTwoAttempts, type PoolCredentialForTest, type PoolTestRedis } from './pool-user.fixture.ts';

type Credential = PoolCredentialForTest;

let redis: PoolTestRedis;
let server: RedisChild;
let admin: Redis;
let registry: PoolAclRegistry;
let producer: AttemptQueueProducer;
const opened: Array<{ disconnect(): void }> = [];

beforeAll(async () => {
  redis = await startPoolTestRedis();
  ({ server, admin, registry, producer } = redis);
}, 10_000);

afterAll(async () => {
  for (const client of opened) client.disconnect();
  await redis?.stop();
});

const issue = (tenantId: string) => issuePoolUser(registry, tenantId);

/** A plain connection as the pool user; it does not reconnect, so a closed one stays closed. */
function poolClient(credential: Credential): Redis {
  const client = new Redis({ ...poolRedisOptions(server.url, credential.username, credential.password), maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  opened.push(client);
  return client;
}

const reply = replyTo;

async function aclDenials(username: string): Promise<string[]> {
  const entries = (await admin.call('ACL', 'LOG')) as unknown[][];
  return entries
    .map((entry) => Object.fromEntries(Array.from({ length: entry.length / 2 }, (_, i) => [String(entry[2 * i]), entry[2 * i + 1]])))
    .filter((entry) => entry['username'] === username)
    .map((entry) => `${entry['reason']} ${entry['object']}`);
}

function completion(worker: Worker): Promise<Job> {
  return new Promise((resolve) => worker.once('completed', resolve));
}

describe('a pool user', { timeout: 15_000 }, () => {
  it("runs a BullMQ Worker on its tenant's queue, with no command refused", async () => {
    const tenant = testId('ten');
    const credential = await issue(tenant);
    const connection = new Redis(poolRedisOptions(server.url, credential.username, credential.password));
    connection.on('error', () => undefined);
    opened.push(connection);
    // As the attempt-worker does: its own ioredis instance, duplicated by BullMQ.
    const worked = await workTwoAttempts(connection, producer, tenant);
    expect(worked.completedId).toBe(worked.queued[0]!.attempt_id);
    expect(worked.failure).toBe('user code failed');
    expect(worked.seen).toEqual(worked.queued);
    expect(worked.left).toEqual({ waiting: 0, active: 0 });
    expect(await aclDenials(credential.username)).toEqual([]);
  });

  it("is refused everything outside its tenant's queue keys", async () => {
    const [tenantA, tenantB] = [testId('ten'), testId('ten')];
    const credential = await issue(tenantA);
    const client = poolClient(credential);
    const own = `${ATTEMPT_QUEUE_PREFIX}:${attemptQueueKeyName(tenantAttemptQueue(tenantA))}`;
    const other = `${ATTEMPT_QUEUE_PREFIX}:${attemptQueueKeyName(tenantAttemptQueue(tenantB))}`;
    await admin.lpush(`${other}:wait`, 'att_x');
    await admin.set('elsewhere', 'x');

    // Positive control: the same user reaches its own keys.
    expect(await reply(client, 'LLEN', `${own}:wait`)).toBe('allowed: 0');
    expect(await reply(client, 'SET', `${own}:probe`, '1')).toBe('allowed: "OK"');

    const refused: Array<[string, ...(string | number)[]]> = [
      ['LLEN', `${other}:wait`],
      ['LRANGE', `${other}:wait`, 0, -1],
      ['LPUSH', `${other}:wait`, 'att_y'],
      ['HGETALL', `${other}:meta`],
      ['DEL', `${other}:wait`],
      ['GET', 'elsewhere'],
      ['KEYS', '*'],
      ['SCAN', 0],
      ['RANDOMKEY'],
      ['DBSIZE'],
      ['FLUSHALL'],
      ['FLUSHDB'],
      ['CONFIG', 'GET', 'maxmemory'],
      ['CLIENT', 'LIST'],
      ['CLIENT', 'KILL', 'ID', 1],
      ['SELECT', 1],
      ['FUNCTION', 'FLUSH'],
      ['SCRIPT', 'FLUSH'],
      ['SCRIPT', 'DEBUG', 'SYNC'],
      ['PUBLISH', `${own}:events`, 'x'],
      ['ACL', 'LIST'],
      ['SHUTDOWN', 'NOSAVE'],
      ['EVAL', "return redis.call('LLEN', KEYS[1])", 1, `${other}:wait`],
      // Any Lua at all, on its own keys: a busy loop would block every client of the server.
      ['EVAL', 'local n = 0 for i = 1, 20000000 do n = n + 1 end return n', 0],
      ['EVAL_RO', 'return 1', 0],
      ['FCALL', 'anything', 0],
      ['SCRIPT', 'LOAD', 'return 1'],
    ];
    for (const command of refused) expect(`${command.join(' ')}: ${await reply(client, ...command)}`).toMatch(/: NOPERM/);
    // A script the engine did not load for workers, though it is in the server's cache, is refused.
    const foreignSha = (await admin.call('SCRIPT', 'LOAD', "return redis.call('DBSIZE')")) as string;
    expect(await reply(client, 'EVALSHA', foreignSha, 0)).toMatch(/NOPERM/);
    // A BullMQ worker script is allowed (positive control), but not on another tenant's keys.
    const isMaxed = poolWorkerScripts().find((script) => script.name === 'isMaxed')!;
    expect(await reply(client, 'EVALSHA', isMaxed.sha1, 2, `${own}:meta`, `${own}:active`)).toMatch(/^allowed/);
    expect(await reply(client, 'EVALSHA', isMaxed.sha1, 2, `${other}:meta`, `${other}:active`)).toMatch(/NOPERM/);
    expect(await admin.llen(`${other}:wait`)).toBe(1);
  });

  it("cannot add to or work another tenant's queue through BullMQ", async () => {
    const [tenantA, tenantB] = [testId('ten'), testId('ten')];
    const credential = await issue(tenantA);
    const connection = new Redis(poolRedisOptions(server.url, credential.username, credential.password));
    connection.on('error', () => undefined);
    opened.push(connection);

    const queue = new Queue(attemptQueueKeyName(tenantAttemptQueue(tenantB)), { connection, prefix: ATTEMPT_QUEUE_PREFIX });
    queue.on('error', () => undefined);
    await expect(queue.add('attempt', attemptJob(tenantB), { jobId: testId('att') })).rejects.toThrow(/NOPERM/);
    await queue.close();

    const victim = attemptJob(tenantB);
    await producer.enqueue(victim, 'remote');
    let processed = false;
    const worker = new Worker(attemptQueueKeyName(tenantAttemptQueue(tenantB)), async () => {
      processed = true;
    }, { connection, prefix: ATTEMPT_QUEUE_PREFIX });
    const refusals = new Promise<Error>((resolve) => worker.once('error', resolve));
    worker.on('error', () => undefined); // it keeps trying until closed
    try {
      const error = await refusals;
      expect(error.message).toMatch(/NOPERM/);
    } finally {
      await worker.close(true);
    }
    expect(processed).toBe(false);
    expect(await producer.counts(tenantAttemptQueue(tenantB))).toEqual({ waiting: 1, active: 0 });
  });

  it('keeps its connections when re-applied, loses them when revoked, and cannot authenticate again', async () => {
    const credential = await issue(testId('ten'));
    const own = `${ATTEMPT_QUEUE_PREFIX}:${attemptQueueKeyName(tenantAttemptQueue(credential.tenantId))}:wait`;
    const client = poolClient(credential);
    expect(await reply(client, 'LLEN', own)).toBe('allowed: 0');

    // Re-applying (as at every placement-service start) leaves running workers connected.
    await registry.apply(credential);
    expect(await reply(client, 'LLEN', own)).toBe('allowed: 0');

    const ended = new Promise((resolve) => client.once('end', resolve));
    await registry.revoke(credential.username);
    await ended;
    expect(client.status).toBe('end');

    const fresh = new Redis(server.url, { maxRetriesPerRequest: 0 });
    opened.push(fresh);
    await expect(fresh.call('AUTH', credential.username, credential.password)).rejects.toThrow(/WRONGPASS/);
    await registry.revoke(credential.username); // revoking twice is a no-op
  });

  it('applyAll makes the given users and removes pool users no longer live', async () => {
    const [kept, dropped] = [await issue(testId('ten')), await issue(testId('ten'))];
    await registry.applyAll([kept]);
    const users = (await admin.call('ACL', 'USERS')) as string[];
    expect(users).toContain(kept.username);
    expect(users).not.toContain(dropped.username);
    expect(users).toContain('default');
  });
});

describe('reapplyOnReady', { timeout: 20_000 }, () => {
  it('makes the pool users again after a Redis restart, and the pool worker carries on', async () => {
    const tenant = testId('ten');
    const password = generatePoolPassword();
    const user: PoolUser = { username: poolRedisUsername(testId('pcr')), passwordSha256: sha256Hex(password), tenantId: tenant };
    const watcher = new Redis(server.url, { maxRetriesPerRequest: null });
    watcher.on('error', () => undefined);
    opened.push(watcher);
    const applied: number[] = [];
    let onApplied: (() => void) | undefined;
    const unhook = reapplyOnReady(watcher, async () => [user], {
      info: (obj) => {
        applied.push((obj as { users: number }).users);
        onApplied?.();
      },
      warn: () => undefined,
    });
    const appliedAgain = (count: number) =>
      new Promise<void>((resolve) => {
        onApplied = () => applied.length >= count && resolve();
        onApplied();
      });
    await appliedAgain(1);

    // Connection options as a pool's worker gets them: BullMQ makes its own connections.
    const worker = new Worker(attemptQueueKeyName(tenantAttemptQueue(tenant)), async (job: Job) => job.id, {
      connection: poolRedisOptions(server.url, user.username, password),
      prefix: ATTEMPT_QUEUE_PREFIX,
    });
    worker.on('error', () => undefined);
    try {
      const before = attemptJob(tenant);
      let completed = completion(worker);
      await producer.enqueue(before, 'remote');
      expect((await completed).id).toBe(before.attempt_id);

      await server.restart();
      await appliedAgain(2);
      expect(applied).toEqual([1, 1]);
      await loadEveryBullmqScript(admin); // the producer's, for this process (see beforeAll)
      expect(await admin.call('ACL', 'USERS')).toContain(user.username);

      const after = attemptJob(tenant);
      completed = completion(worker);
      await producer.enqueue(after, 'remote');
      expect((await completed).id).toBe(after.attempt_id);
    } finally {
      unhook();
      await worker.close();
    }
  });
});
