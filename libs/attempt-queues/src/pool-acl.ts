import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { everyRedisServer, REDIS_CLUSTER_CLIENT_COMMANDS, type RedisConnection } from '@envengine/redis-connections';
import { attemptQueueKeyPattern, LOCAL_ATTEMPT_QUEUE, tenantAttemptQueue } from './attempt-queues.ts';
import { ENVIRONMENT_RETIRED_CHANNEL } from '@envengine/contracts';

export interface PoolUser {
  username: string;
  /** The password's SHA-256 (hex): Redis takes it as `#<hash>`, so the password is never kept. */
  passwordSha256: string;
  tenantId: string;
}

/** Every pool user's name starts so; `applyAll` removes the ones it was not given. */
export const POOL_USERNAME_PREFIX = 'pool-';

const CREDENTIAL_ID = /^[0-9a-z_]{1,64}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

export function poolRedisUsername(credentialId: string): string {
  if (!CREDENTIAL_ID.test(credentialId)) throw new Error(`"${credentialId}" is not a credential id`);
  return `${POOL_USERNAME_PREFIX}${credentialId}`;
}

/** 32 random bytes, base64url: shown once, kept only as its SHA-256. */
export function generatePoolPassword(): string {
  return randomBytes(32).toString('base64url');
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * What a BullMQ Worker (bullmq 6.7, with ioredis) sends on its own connections, outside its
 * Lua scripts. Found by running a real Worker under the rules and reading `ACL LOG`:
 * EVALSHA runs the scripts (granted per script, below), BZPOPMIN is the blocking
 * connection's wait on the queue's marker key, INFO is ioredis's ready check and BullMQ's
 * version check (without it the Worker does not start), CLIENT SETNAME names the blocking
 * connection. AUTH and QUIT need no grant. EVAL is not granted: with it a pool could run any
 * Lua it likes (`while true do end` blocks every client of the server). On a Redis Cluster
 * the client also learns the layout (`CLUSTER SLOTS`, its ready check `CLUSTER INFO`) and
 * marks its connections to replicas READONLY: they show which node serves which slots,
 * never a key.
 */
export const POOL_CONNECTION_COMMANDS: readonly string[] = ['bzpopmin', 'info', 'client|setname', ...REDIS_CLUSTER_CLIENT_COMMANDS];

/**
 * The BullMQ scripts a Worker runs (bullmq 6.7's RedisQueueBackend). Not a job's own
 * methods (`log`, `updateProgress`, `updateData`): the attempt-worker reports logs and
 * progress through the worker API, and `addLog` with no `keepLogs` would let a worker grow
 * a job's log list without bound.
 */
export const POOL_WORKER_SCRIPT_NAMES: readonly string[] = [
  'moveToActive', 'moveToFinished', 'extendLock', 'extendLocks', 'moveStalledJobsToWait', 'retryJob', 'moveToDelayed',
  'moveJobFromActiveToWait', 'getRateLimitTtl', 'isMaxed',
];

export interface WorkerScript {
  name: string;
  /** The Lua source, as BullMQ defines the command with ioredis (which sends EVALSHA of its SHA-1). */
  content: string;
  sha1: string;
  /** How many of its arguments are keys (`EVALSHA <sha1> <keys> …`). */
  keys: number;
}

/**
 * The installed BullMQ's worker scripts: the engine loads them into Redis (`SCRIPT LOAD`)
 * and a pool user may run exactly these by EVALSHA. Read from BullMQ itself, so an upgrade
 * changes the hashes and the grants together.
 */
export function poolWorkerScripts(): WorkerScript[] {
  // The CommonJS build, which is what Node loads for `import 'bullmq'` (its ESM build is not Node-loadable as is).
  const bullmqScripts = createRequire(import.meta.url)('bullmq/dist/cjs/scripts/index.js') as Record<string, { name: string; content: string; keys: number }>;
  const byName = new Map(Object.values(bullmqScripts).map((script) => [script.name, script]));
  return POOL_WORKER_SCRIPT_NAMES.map((name) => {
    const script = byName.get(name);
    if (script === undefined) throw new Error(`BullMQ has no script "${name}": the pool ACL needs updating for this BullMQ version`);
    return { name, content: script.content, sha1: createHash('sha1').update(script.content).digest('hex'), keys: script.keys };
  });
}

/**
 * What the Lua scripts a Worker runs call (ACL rules apply inside scripts too): moveToActive,
 * moveToFinished, extendLock(s), moveStalledJobsToWait, retryJob, moveToDelayed,
 * moveJobFromActiveToWait, updateProgress, addLog, updateData, saveStacktrace, releaseLock,
 * getRateLimitTtl and isMaxed, with their includes. `pool-acl.test.ts` reads the installed
 * BullMQ's scripts and fails when an upgrade needs another command.
 */
export const POOL_SCRIPT_COMMANDS: readonly string[] = [
  'del', 'exists', 'get', 'set', 'incr', 'pexpire', 'pttl',
  'hdel', 'hexists', 'hget', 'hgetall', 'hincrby', 'hmget', 'hmset', 'hset',
  'llen', 'lpush', 'lrange', 'lrem', 'ltrim', 'rpoplpush', 'rpush',
  'sadd', 'scard', 'smembers', 'srem',
  'xadd', 'xtrim',
  'zadd', 'zcard', 'zpopmin', 'zrange', 'zrangebyscore', 'zrem', 'zremrangebyrank', 'zremrangebyscore',
  'zrevrange', 'zrevrangebyscore', 'zscore',
];

/** The key pattern of a tenant's queue: `envengine:{attempts-<tenant>}:*`. */
export function poolKeyPattern(tenantId: string): string {
  return attemptQueueKeyPattern(tenantAttemptQueue(tenantId));
}

/**
 * The `ACL SETUSER` rules of a pool user: no command but the ones named above (an allow
 * list, not categories: `@read`/`@keyspace` alone would give RANDOMKEY and DBSIZE, which
 * show other tenants' keys, and `@scripting` FUNCTION FLUSH and SCRIPT DEBUG), on the keys
 * of its tenant's queue only, and no pub/sub channel. INFO is the one `@dangerous` command
 * left, because the Worker will not start without it.
 */
export function poolAclRules(tenantId: string): string[] {
  return queueConsumerRules(poolKeyPattern(tenantId));
}

/** A Worker's grants on one key pattern; EVALSHA only of the worker scripts (`+evalsha|<sha1>`). */
function queueConsumerRules(keyPattern: string): string[] {
  return [
    'resetchannels',
    '-@all',
    ...[...POOL_CONNECTION_COMMANDS, ...POOL_SCRIPT_COMMANDS].map((command) => `+${command}`),
    ...poolWorkerScripts().map((script) => `+evalsha|${script.sha1}`),
    `~${keyPattern}`,
  ];
}

/**
 * The engine's own runner (`attempt-worker --local`): a pool user's grants on the `local`
 * queue, and EVAL, since it may start before the placement-service has loaded the scripts
 * and ioredis falls back to EVAL on NOSCRIPT. It is engine code; tenants' code it runs is
 * sandboxed with no route to Redis.
 */
export function localRunnerAclRules(): string[] {
  return [
    ...queueConsumerRules(attemptQueueKeyPattern(LOCAL_ATTEMPT_QUEUE)),
    '+eval',
    // It hears of environments torn down, to drop their bundles from its cache; no other channel.
    'resetchannels',
    `&${ENVIRONMENT_RETIRED_CHANNEL}`,
    '+subscribe',
    '+unsubscribe',
  ];
}

/**
 * Creates and removes the pool users (with the placement-service's own connection). ACL
 * users and the script cache are each Redis server's own: on a Redis Cluster every command
 * here goes to every node, replicas included (a replica that takes over serves the pool's
 * connections the next moment). A change is written to each node's ACL file when it has
 * one (`ACL SAVE`), so a node that restarts has the pool users before anyone reapplies them.
 */
export class PoolAclRegistry {
  constructor(private readonly redis: RedisConnection) {}

  /**
   * (Re)creates the user from scratch: `reset` first, so nothing of an older definition
   * survives. Redis applies the command whole, and keeps the user's open connections
   * (re-applying at every start does not disturb running workers).
   */
  async apply(user: PoolUser): Promise<void> {
    await this.onEveryServer(async (server) => {
      await server.call('ACL', 'SETUSER', ...poolSetUserArguments(user));
      await saveAcl(server);
    });
  }

  /** Deletes the user (no-op if unknown); Redis closes its open connections. */
  async revoke(username: string): Promise<void> {
    await this.onEveryServer(async (server) => {
      await server.call('ACL', 'DELUSER', username);
      await saveAcl(server);
    });
  }

  /**
   * Loads the worker scripts into Redis's script cache (which a restart empties): pool
   * users run them by EVALSHA only, and a NOSCRIPT would fall back to EVAL, which they lack.
   */
  async loadWorkerScripts(): Promise<void> {
    await this.onEveryServer(async (server) => {
      for (const script of poolWorkerScripts()) await server.call('SCRIPT', 'LOAD', script.content);
    });
  }

  /** After a Redis restart: every live user made again, and pool users no longer live removed. */
  async applyAll(users: readonly PoolUser[]): Promise<void> {
    const live = new Set(users.map((user) => user.username));
    await this.onEveryServer(async (server) => {
      const existing = (await server.call('ACL', 'USERS')) as string[];
      for (const username of existing) {
        if (username.startsWith(POOL_USERNAME_PREFIX) && !live.has(username)) await server.call('ACL', 'DELUSER', username);
      }
      for (const user of users) await server.call('ACL', 'SETUSER', ...poolSetUserArguments(user));
      await saveAcl(server);
    });
  }

  /**
   * Every server at once, as the cluster lists them (`everyRedisServer`: replicas its
   * client has not met included). A node that cannot be reached is given everything when
   * it is back (`reapplyOnReady`), so only a failure on a master, where the queues are,
   * fails the call.
   */
  private async onEveryServer(action: (server: Redis) => Promise<void>): Promise<void> {
    const { servers, release } = await everyRedisServer(this.redis);
    try {
      if (servers.length === 0) throw new Error('Redis: no server is connected');
      const results = await Promise.allSettled(servers.map(({ server }) => action(server)));
      const fatal = results.find((result, index): result is PromiseRejectedResult => result.status === 'rejected' && servers[index]!.master);
      if (fatal) throw fatal.reason;
    } finally {
      release();
    }
  }
}

/** Writes the ACL to the server's ACL file, when it was started with one (the engine's servers are). */
async function saveAcl(server: Redis): Promise<void> {
  await server.call('ACL', 'SAVE').catch((error: Error) => {
    if (!/not configured to use an ACL file/i.test(error.message)) throw error;
  });
}

/** The arguments after `ACL SETUSER`: `<user> reset on #<sha256> <rules…>`. */
export function poolSetUserArguments(user: PoolUser): string[] {
  if (!user.username.startsWith(POOL_USERNAME_PREFIX)) throw new Error(`"${user.username}" is not a pool user name`);
  if (!SHA256_HEX.test(user.passwordSha256)) throw new Error('passwordSha256 must be 64 lowercase hex characters');
  return [user.username, 'reset', 'on', `#${user.passwordSha256}`, ...poolAclRules(user.tenantId)];
}

export interface PoolAclLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * ACL users and the script cache live in Redis's memory: whenever the connection becomes
 * ready (at start and after every reconnect, e.g. a Redis restart), the worker scripts are
 * loaded and the users made again from `loadUsers`. A
 * 'ready' during a run queues one more run. Returns a function that unhooks it.
 */
export function reapplyOnReady(redis: RedisConnection, loadUsers: () => Promise<PoolUser[]>, log: PoolAclLog): () => void {
  const registry = new PoolAclRegistry(redis);
  let running = false;
  let again = false;
  const reapply = async (): Promise<void> => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        try {
          await registry.loadWorkerScripts();
          const users = await loadUsers();
          await registry.applyAll(users);
          log.info({ users: users.length }, 'pool Redis users applied');
        } catch (error) {
          log.warn({ err: (error as Error).message }, 'could not apply pool Redis users; retrying at the next reconnect');
        }
      } while (again);
    } finally {
      running = false;
    }
  };
  const onReady = () => void reapply();
  redis.on('ready', onReady);
  // A cluster's client connects to a node it has not seen (a restarted one, a new replica)
  // without becoming 'ready' again: that node gets everything too.
  redis.on('+node', onReady);
  if (redis.status === 'ready') onReady();
  return () => {
    redis.off('ready', onReady);
    redis.off('+node', onReady);
  };
}
