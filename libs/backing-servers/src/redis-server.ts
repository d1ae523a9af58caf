import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { connectRedis, redisUrlList } from '@envengine/redis-connections';
import { aptInstall, findOnPath, type Reporter } from './binaries.ts';
import { ServerUnavailableError, withCredential, withoutCredential, type BackingServer } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { freePort, waitUntil } from './network.ts';

export interface StartRedisOptions {
  url?: string;
  dataDir: string;
  port?: number;
  /** Keep data across restarts (append-only file). Default true. */
  persist?: boolean;
  /** The ACL: `default` off and these users only. Without it Redis has its open `default` user (tests of Redis itself). */
  acl?: RedisAcl;
  /** `maxmemory` in MiB, with `noeviction`: a full Redis refuses writes instead of dropping queued attempts. */
  maxMemoryMb?: number;
  report: Reporter;
  env?: NodeJS.ProcessEnv;
}

export interface RedisUser {
  username: string;
  password: string;
  /** ACL rules after `on #<sha256>`, e.g. `~envengine:*`, `+@all`. */
  rules: readonly string[];
}

export interface RedisAcl {
  /** Every key, channel and command: the stack tool, the admin command and tests. */
  admin: { username: string; password: string };
  users: readonly RedisUser[];
}

/** How Redis's ACL takes a password without keeping it: `#<sha256 hex>`. */
export function redisPasswordHash(password: string): string {
  return `#${createHash('sha256').update(password, 'utf8').digest('hex')}`;
}

/** The ACL file: `default` off, each user with its password's SHA-256 only (the file never holds a password). */
export function redisAclFile(acl: RedisAcl): string {
  const lines = [
    'user default off resetkeys resetchannels -@all',
    `user ${acl.admin.username} on ${redisPasswordHash(acl.admin.password)} ~* &* +@all`,
    ...acl.users.map((user) => `user ${user.username} on ${redisPasswordHash(user.password)} ${user.rules.join(' ')}`),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * `redis-server` with its arguments, under umask 077: `ACL SAVE` (the placement-service
 * saves pool users) writes the ACL file anew with mode 0644 otherwise. Through `sh -c …
 * exec`, so the process is redis-server itself (its pid, its signals).
 */
export function redisServerCommand(redisServer: string, args: readonly string[]): { command: string; args: string[] } {
  return { command: '/bin/sh', args: ['-c', 'umask 077 && exec "$0" "$@"', redisServer, ...args] };
}

/** A `redis://` URL for one user; for a Redis Cluster's comma-separated list of node URLs, each of them. */
export function redisUrlFor(url: string, credential: { username: string; password: string }): string {
  return redisUrlList(url)
    .map((one) => withCredential(one, credential).toString())
    .join(',');
}

/** One server answers PING; a Redis Cluster (a list of its nodes) is ready, every slot served. */
async function redisAnswers(url: string): Promise<boolean> {
  const client = connectRedis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
  client.on('error', () => undefined); // a refused probe is an answer, not an error
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } finally {
    client.disconnect();
  }
}

/** `redis-server` from PATH, else installed with apt (when root); with where it came from. */
export function redisServerBinary(report: Reporter, env: NodeJS.ProcessEnv = process.env): { path: string; source: BackingServer['source'] } | undefined {
  const onPath = findOnPath('redis-server', env);
  if (onPath) return { path: onPath, source: 'path' };
  if (!aptInstall('redis-server', report, env)) return undefined;
  return { path: findOnPath('redis-server', env) ?? '/usr/bin/redis-server', source: 'apt' };
}

/** Redis: REDIS_URL, then `redis-server` on PATH, then `apt-get install redis-server`. */
export async function startRedis(options: StartRedisOptions): Promise<BackingServer> {
  const env = options.env ?? process.env;
  if (options.url) {
    await waitUntil('Redis at REDIS_URL', () => redisAnswers(options.url!), { timeoutMs: 15_000 });
    return { name: 'redis', url: withoutCredential(options.url), adminUrl: options.url, source: 'url', links: {}, stop: async () => undefined };
  }
  const found = redisServerBinary(options.report, env);
  if (!found) {
    throw new ServerUnavailableError('Redis', 'Set REDIS_URL to a running Redis, or install it: sudo apt-get install redis-server.');
  }
  const port = options.port ?? (await freePort());
  const dir = join(options.dataDir, 'redis');
  mkdirSync(dir, { recursive: true });
  const logFile = join(options.dataDir, 'logs', 'redis.log');
  const persist = options.persist ?? true;
  const aclArgs: string[] = [];
  if (options.acl) {
    const aclFile = join(dir, 'users.acl');
    writeFileSync(aclFile, redisAclFile(options.acl), { mode: 0o600 });
    chmodSync(aclFile, 0o600);
    aclArgs.push('--aclfile', aclFile);
  }
  if (options.maxMemoryMb !== undefined) aclArgs.push('--maxmemory', `${options.maxMemoryMb}mb`, '--maxmemory-policy', 'noeviction');
  const process_ = new ManagedProcess({
    name: 'redis-server',
    ...redisServerCommand(found.path, [
      '--port', String(port),
      '--bind', '127.0.0.1',
      '--dir', dir,
      '--save', '',
      '--appendonly', persist ? 'yes' : 'no',
      '--daemonize', 'no',
      ...aclArgs,
    ]),
    logFile,
  });
  const url = `redis://127.0.0.1:${port}`;
  const adminUrl = options.acl ? redisUrlFor(url, options.acl.admin) : url;
  try {
    await waitUntil('redis-server', () => redisAnswers(adminUrl), { timeoutMs: 15_000, alive: () => process_.running, logFile });
  } catch (error) {
    await process_.stop();
    throw error;
  }
  return { name: 'redis', url, adminUrl, source: found.source, process: process_, links: {}, stop: () => process_.stop() };
}
