import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { pack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCommand, replyEnd, startRedisGate, type RedisGate } from '@envengine/redis-gate';
import { ATTEMPT_QUEUE_PREFIX, AttemptQueueProducer, attemptQueueKeyName, tenantAttemptQueue } from './attempt-queues.ts';
import { POOL_USERNAME_PREFIX, PoolAclRegistry, poolWorkerScripts } from './pool-acl.ts';
import { POOL_GATE_LIMITS, poolGatePolicy } from './pool-gate-policy.ts';
import { poolRedisOptions } from './pool-connection.ts';
import { testId, type RedisChild } from './redis-child.fixture.ts';
import { issuePoolUser, replyTo, startPoolTestRedis, workTwoAttempts, type PoolCredentialForTest, type PoolTestRedis } from './pool-user.fixture.ts';

type Credential = PoolCredentialForTest;

/** Connections one pool user may hold through the gate here. */
const PER_USER = 4;
/** How long the gate here waits for a connection's AUTH. */
const AUTH_TIMEOUT_MS = 300;
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
  gate = await startRedisGate({
    host: '127.0.0.1',
    port: 0,
    policy: poolGatePolicy({ redisVersion: "7.2.0" }),
    limits: POOL_GATE_LIMITS,
    acceptsUser: (username) => username.startsWith(POOL_USERNAME_PREFIX),
    nodeForSlot: () => `127.0.0.1:${server.port}`,
    cluster: false,
    maxConnections: 64,
    maxConnectionsPerUser: PER_USER,
    authTimeoutMs: AUTH_TIMEOUT_MS,
    log: { info: () => undefined, warn: () => undefined },
  });
}, 10_000);

afterAll(async () => {
  for (const client of opened) client.disconnect();
  await gate?.close();
  await redis?.stop();
});

const gatePort = () => Number(gate.address.split(':').pop());

const issue = (tenantId: string) => issuePoolUser(registry, tenantId);

/** A connection as the pool user, through the gate or straight to Redis; it does not reconnect. */
function client(credential: Credential, through: 'gate' | 'redis'): Redis {
  const options = poolRedisOptions(`redis://127.0.0.1:${through === 'gate' ? gatePort() : server.port}`, credential.username, credential.password);
  const connection = new Redis({ ...options, maxRetriesPerRequest: 0, retryStrategy: () => null });
  connection.on('error', () => undefined);
  opened.push(connection);
  return connection;
}

const reply = replyTo;

/** A job id the engine would give (an attempt's), of a job that is not there. */
const job = testId('att');
/** moveToFinished's 14 keys for `job`, as bullmq 6.7 names them. */
const finishKeys = (own: string) => ['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', 'completed', job, 'metrics:completed', 'marker'].map((key) => `${own}:${key}`);
const finishOptions = (keepJobs = { count: 0 }) => pack({ token: 'worker-1:1', keepJobs, lockDuration: 30_000, attempts: 1, maxMetricsSize: '' });

/** Raw bytes to the gate, and every reply it sends until it has sent `count` of them or hangs up. */
async function rawExchange(bytes: Buffer, count: number): Promise<{ replies: string[]; closed: boolean }> {
  const socket = connect({ host: '127.0.0.1', port: gatePort() });
  let received = Buffer.alloc(0);
  const replies: string[] = [];
  return new Promise((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      for (let end = replyEnd(received); end !== undefined; end = replyEnd(received)) {
        replies.push(received.toString('utf8', 0, end).trimEnd());
        received = received.subarray(end);
      }
      if (replies.length >= count) {
        socket.destroy();
        resolve({ replies, closed: false });
      }
    });
    socket.on('close', () => resolve({ replies, closed: true }));
    socket.write(bytes);
  });
}

describe('the pool gate', { timeout: 15_000 }, () => {
  it('runs a BullMQ Worker on its tenant\'s queue, through the gate', async () => {
    const tenant = testId('ten');
    const credential = await issue(tenant);
    const connection = new Redis(poolRedisOptions(`redis://127.0.0.1:${gatePort()}`, credential.username, credential.password));
    connection.on('error', () => undefined);
    opened.push(connection);
    const worked = await workTwoAttempts(connection, producer, tenant);
    expect(worked.completedId).toBe(worked.queued[0]!.attempt_id);
    expect(worked.failure).toBe('user code failed');
    expect(worked.seen).toEqual(worked.queued);
    expect(worked.left).toEqual({ waiting: 0, active: 0 });
    expect(worked.errors).toEqual([]);
  });

  it('refuses plain writes on its own keys that Redis itself would allow the same user', async () => {
    const tenant = testId('ten');
    const credential = await issue(tenant);
    const own = `${ATTEMPT_QUEUE_PREFIX}:${attemptQueueKeyName(tenantAttemptQueue(tenant))}`;
    const gated = client(credential, 'gate');
    const direct = client(credential, 'redis');
    const writes: Array<[string, ...(string | number)[]]> = [
      ['SET', `${own}:junk`, 'x'],
      ['HSET', `${own}:junk-hash`, 'f', 'x'],
      ['LPUSH', `${own}:junk-list`, 'x'],
      ['GET', `${own}:junk`],
      ['LLEN', `${own}:wait`],
    ];
    for (const command of writes) {
      // Positive control: the user's ACL allows it on Redis itself (its scripts need these).
      expect(await reply(direct, ...command), command[0]).toMatch(/^allowed/);
      expect(await reply(gated, ...command), command[0]).toMatch(/^NOPERM the pool gate does not pass/);
    }
    // No script calls APPEND, so the ACL refuses it too; the gate answers before Redis is asked.
    expect(await reply(gated, 'APPEND', `${own}:junk`, 'x')).toMatch(/^NOPERM the pool gate does not pass/);
    await admin.del(`${own}:junk`, `${own}:junk-hash`, `${own}:junk-list`);
    for (const command of <Array<[string, ...(string | number)[]]>>[['KEYS', '*'], ['FLUSHALL'], ['CONFIG', 'GET', 'maxmemory'], ['SUBSCRIBE', 'x'], ['CLUSTER', 'SLOTS'], ['SELECT', 1], ['CLIENT', 'KILL', 'ID', 1], ['EVAL', 'return 1', 0], ['SCRIPT', 'LOAD', 'return 1'], ['MULTI']]) {
      expect(await reply(gated, ...command), command.join(' ')).toMatch(/^NOPERM the pool gate/);
    }
    const foreignSha = (await admin.call('SCRIPT', 'LOAD', "return redis.call('SET', KEYS[1], ARGV[1])")) as string;
    expect(await reply(gated, 'EVALSHA', foreignSha, 1, `${own}:junk`, 'x')).toMatch(/^NOPERM the pool gate/);
    expect(await admin.exists(`${own}:junk`)).toBe(0);
    // What passes still meets Redis's ACL: a worker script on another tenant's keys.
    const isMaxed = poolWorkerScripts().find((script) => script.name === 'isMaxed')!;
    const other = `${ATTEMPT_QUEUE_PREFIX}:${attemptQueueKeyName(tenantAttemptQueue(testId('ten')))}`;
    expect(await reply(gated, 'EVALSHA', isMaxed.sha1, 2, `${own}:meta`, `${own}:active`)).toMatch(/^allowed/);
    expect(await reply(gated, 'EVALSHA', isMaxed.sha1, 2, `${other}:meta`, `${other}:active`)).toMatch(/NOPERM.*(no permissions|No permissions)/i);
  });

  it('cuts off a command with an argument over the bound, and passes one under it', async () => {
    const tenant = testId('ten');
    const credential = await issue(tenant);
    const own = `${ATTEMPT_QUEUE_PREFIX}:${attemptQueueKeyName(tenantAttemptQueue(tenant))}`;
    const moveToFinished = poolWorkerScripts().find((script) => script.name === 'moveToFinished')!;
    const auth = encodeCommand(['AUTH', credential.username, credential.password]);
    // A job's return value, the one argument of a worker's that may be this large.
    const finish = (returnValue: Buffer) => encodeCommand(['EVALSHA', moveToFinished.sha1, '14', ...finishKeys(own), job, String(Date.now()), 'returnvalue', returnValue, 'completed', '0', `${own}:`, finishOptions(), '']);
    const underBound = Buffer.alloc(POOL_GATE_LIMITS.maxArgumentBytes, 'a');
    const overBound = Buffer.alloc(POOL_GATE_LIMITS.maxArgumentBytes + 1, 'a');
    // Positive control: at the bound, Redis gets it (and the script answers that the job is missing).
    const under = await rawExchange(Buffer.concat([auth, finish(underBound)]), 2);
    expect(under.replies).toEqual(['+OK', ':-1']);
    const over = await rawExchange(Buffer.concat([auth, finish(overBound)]), 3);
    expect(over.replies).toEqual(['+OK', `-ERR an argument is at most ${POOL_GATE_LIMITS.maxArgumentBytes} bytes; the gate closes this connection`]);
    expect(over.closed).toBe(true);
  });

  it('refuses a moveToFinished that would keep the finished job, and passes one that removes it', async () => {
    const tenant = testId('ten');
    const credential = await issue(tenant);
    const own = `${ATTEMPT_QUEUE_PREFIX}:${attemptQueueKeyName(tenantAttemptQueue(tenant))}`;
    const moveToFinished = poolWorkerScripts().find((script) => script.name === 'moveToFinished')!;
    const gated = client(credential, 'gate');
    // BullMQ 6.7's 14 keys and 9 arguments, as its Worker sends them for a job that is not there.
    const keys = finishKeys(own);
    const finish = (keepJobs: { count: number }) =>
      reply(gated, 'EVALSHA', moveToFinished.sha1, keys.length, ...keys, job, Date.now(), 'returnvalue', '"done"', 'completed', 0, `${own}:`, finishOptions(keepJobs), '');
    // Positive control: removing the job, it reaches the script (which answers that the job is missing).
    expect(await finish({ count: 0 })).toMatch(/^allowed: -1$/);
    expect(await finish({ count: -1 })).toMatch(/^NOPERM the pool gate does not pass moveToFinished with argument 8 refused: options.keepJobs: must be \{count: 0\}: an attempt's job is removed when it ends/);
    expect(await finish({ count: 100 })).toMatch(/^NOPERM/);
  });

  it('answers in the order commands were sent, its own refusals among Redis\'s replies', async () => {
    const credential = await issue(testId('ten'));
    const pipeline = Buffer.concat([
      encodeCommand(['AUTH', credential.username, credential.password]),
      encodeCommand(['CLIENT', 'SETNAME', 'probe']),
      encodeCommand(['SET', 'k', 'v']),
      encodeCommand(['INFO', 'server']),
      encodeCommand(['GET', 'k']),
      encodeCommand(['QUIT']),
    ]);
    const { replies, closed } = await rawExchange(pipeline, 6);
    expect(replies.map((line) => line.split('\r\n')[0]!.replace(/^(\$\d+|-NOPERM).*/, '$1'))).toEqual(['+OK', '+OK', '-NOPERM', expect.stringMatching(/^\$\d+$/), '-NOPERM', '+OK']);
    expect(replies[3]).toContain('redis_version');
    expect(closed || replies.length === 6).toBe(true);
  });

  it('takes only pool users, and nothing before AUTH', async () => {
    const credential = await issue(testId('ten'));
    const before = await rawExchange(encodeCommand(['INFO']), 1);
    expect(before.replies).toEqual(['-NOAUTH Authentication required.']);
    const wrong = await rawExchange(encodeCommand(['AUTH', credential.username, 'not-the-password']), 1);
    expect(wrong.replies[0]).toMatch(/^-WRONGPASS/);
    const notPool = await rawExchange(encodeCommand(['AUTH', 'default', 'anything']), 1);
    expect(notPool.replies[0]).toMatch(/^-WRONGPASS/);
    const inline = await rawExchange(Buffer.from('AUTH x y\r\n'), 1);
    expect(inline.replies[0]).toMatch(/^-ERR only commands sent as RESP arrays/);
  });

  it("holds one user to its share of connections, and hangs up on a refused AUTH, while another user's connection works", async () => {
    const [greedy, other] = [await issue(testId('ten')), await issue(testId('ten'))];
    const held = Array.from({ length: PER_USER }, () => client(greedy, 'gate'));
    for (const connection of held) expect(await reply(connection, 'INFO', 'server')).toMatch(/^allowed/);
    // One more of the same user is refused and closed; another user still gets in.
    const over = await rawExchange(encodeCommand(['AUTH', greedy.username, greedy.password]), 2);
    expect(over.replies[0]).toMatch(/^-ERR max number of clients reached for user/);
    expect(over.closed).toBe(true);
    expect(await reply(client(other, 'gate'), 'INFO', 'server')).toMatch(/^allowed/);
    // A connection given back is one the user may open again.
    const closed = new Promise<void>((resolve) => held[0]!.once('end', () => resolve()));
    held[0]!.disconnect();
    await closed;
    // (The gate hears of the close a moment after the client: asked again until it has.)
    let again = '';
    for (const deadline = Date.now() + 10_000; again !== '+OK' && Date.now() < deadline; ) {
      again = (await rawExchange(Buffer.concat([encodeCommand(['AUTH', greedy.username, greedy.password]), encodeCommand(['QUIT'])]), 2)).replies[0] ?? '';
    }
    expect(again).toBe('+OK');
    // A wrong password is answered, then the connection (and its connection to Redis) is closed.
    const wrong = await rawExchange(Buffer.concat([encodeCommand(['AUTH', other.username, 'not-the-password']), encodeCommand(['INFO'])]), 5);
    expect(wrong.replies[0]).toMatch(/^-WRONGPASS/);
    expect(wrong.closed).toBe(true);
  });

  it('closes a connection that does not authenticate in time, and keeps one that did', async () => {
    const credential = await issue(testId('ten'));
    const signedIn = client(credential, 'gate');
    expect(await reply(signedIn, 'INFO', 'server')).toMatch(/^allowed/);
    // Connected and silent: closed by the gate (the exchange waits for a reply that never comes, or the close).
    const silent = await rawExchange(Buffer.alloc(0), 1);
    expect(silent).toEqual({ replies: [], closed: true });
    // The one that signed in is still served, past the same time.
    expect(await reply(signedIn, 'INFO', 'server')).toMatch(/^allowed/);
  });

  it("closes a revoked user's connections, as Redis does", async () => {
    const credential = await issue(testId('ten'));
    const gated = client(credential, 'gate');
    expect(await reply(gated, 'INFO', 'server')).toMatch(/^allowed/);
    const closed = new Promise<void>((resolve) => gated.once('end', () => resolve()));
    await registry.revoke(credential.username);
    await closed;
    const again = await rawExchange(encodeCommand(['AUTH', credential.username, credential.password]), 1);
    expect(again.replies[0]).toMatch(/^-WRONGPASS/);
  });
});
