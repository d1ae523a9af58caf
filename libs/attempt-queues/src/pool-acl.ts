import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { ATTEMPT_QUEUE_PREFIX, tenantAttemptQueue } from './attempt-queues.ts';

export interface PoolUser {
  username: string;
  /** The password's SHA-256 (hex): Redis takes it as `#<hash>`, so the password is never kept. */
  passwordSha256: string;
  tenantId: string;
}

export function poolRedisUsername(credentialId: string): string {
  return `pool-${credentialId}`;
}

export function generatePoolPassword(): string {
  return randomBytes(32).toString('base64url');
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * What a pool's Redis user may do: the commands a BullMQ Worker uses, on its tenant's
 * queue keys and channels only. `-@dangerous` takes away KEYS, FLUSHALL, CONFIG, CLIENT,
 * INFO and the like; the three a Worker needs (INFO for the version check, CLIENT
 * SETNAME/GETNAME) are given back one by one; SCAN is taken away too, so that a worker
 * cannot even list other tenants' keys. Found by running a real Worker under it.
 */
export function poolAclRules(tenantId: string): string[] {
  const keys = `${ATTEMPT_QUEUE_PREFIX}:${tenantAttemptQueue(tenantId)}:*`;
  return [
    `~${keys}`,
    'resetchannels',
    `&${keys}`,
    '-@all',
    '+@read', '+@write', '+@scripting', '+@stream', '+@list', '+@sortedset', '+@hash', '+@string', '+@keyspace',
    '+@blocking', '+@connection', '+@pubsub', '+@transaction',
    '-@dangerous',
    '+info', '+client|setname', '+client|getname', '+client|id',
    '-keys', '-scan', '-script|flush', '-script|kill',
  ];
}

/** Creates and removes the pool users (with the placement-service's own connection). */
export class PoolAclRegistry {
  constructor(private readonly redis: Redis) {}

  /** (Re)creates the user from scratch: `reset` first, so nothing of an older definition survives. */
  async apply(user: PoolUser): Promise<void> {
    await this.redis.call('ACL', 'SETUSER', user.username, 'reset', 'on', `#${user.passwordSha256}`, ...poolAclRules(user.tenantId));
  }

  /** Deletes the user; Redis closes its open connections. */
  async revoke(username: string): Promise<void> {
    await this.redis.call('ACL', 'DELUSER', username);
  }

  /** After a Redis restart: every live user made again, and pool users no longer live removed. */
  async applyAll(users: readonly PoolUser[]): Promise<void> {
    const live = new Set(users.map((user) => user.username));
    const existing = (await this.redis.call('ACL', 'USERS')) as string[];
    for (const username of existing) if (username.startsWith('pool-') && !live.has(username)) await this.revoke(username);
    for (const user of users) await this.apply(user);
  }
}

/**
 * ACL users live in Redis's memory: whenever the connection becomes ready (at start and
 * after every reconnect, e.g. a Redis restart), they are made again from `loadUsers`.
 */
export function reapplyOnReady(
  redis: Redis,
  loadUsers: () => Promise<PoolUser[]>,
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void },
): void {
  const registry = new PoolAclRegistry(redis);
  const reapply = async () => {
    try {
      const users = await loadUsers();
      await registry.applyAll(users);
      log.info({ users: users.length }, 'pool Redis users applied');
    } catch (error) {
      log.warn({ err: (error as Error).message }, 'could not apply pool Redis users; retrying at the next reconnect');
    }
  };
  redis.on('ready', () => void reapply());
  if (redis.status === 'ready') void reapply();
}
