import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { aptInstall, findOnPath, type Reporter } from './binaries.ts';
import { ServerUnavailableError, type BackingServer } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { freePort, waitUntil } from './network.ts';

export interface StartRedisOptions {
  url?: string;
  dataDir: string;
  port?: number;
  /** Keep data across restarts (append-only file). Default true. */
  persist?: boolean;
  report: Reporter;
  env?: NodeJS.ProcessEnv;
}

async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000, retryStrategy: () => null });
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
    return { name: 'redis', url: options.url, source: 'url', links: {}, stop: async () => undefined };
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
  const process_ = new ManagedProcess({
    name: 'redis-server',
    command: found.path,
    args: [
      '--port', String(port),
      '--bind', '127.0.0.1',
      '--dir', dir,
      '--save', '',
      '--appendonly', persist ? 'yes' : 'no',
      '--daemonize', 'no',
    ],
    logFile,
  });
  const url = `redis://127.0.0.1:${port}`;
  await waitUntil('redis-server', () => redisAnswers(url), { timeoutMs: 15_000, alive: () => process_.running, logFile });
  return { name: 'redis', url, source: found.source, process: process_, links: {}, stop: () => process_.stop() };
}
