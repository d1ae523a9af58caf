import { Command, Redis } from 'ioredis';

/** Options both `new Redis(options)` (ioredis) and a BullMQ `connection` take. */
export interface PoolRedisOptions {
  host: string;
  port: number;
  tls?: Record<string, never>;
  username: string;
  password: string;
  maxRetriesPerRequest: null;
}

/**
 * ioredis options for a pool worker's BullMQ connections: `new Redis(options)` or a
 * Worker's `connection`. The credential is the pool's own, so a URL that carries one is
 * refused rather than silently preferred (ioredis lets the URL's win); database 0 only,
 * where the queues are (the pool user has no SELECT). `maxRetriesPerRequest: null`:
 * BullMQ's blocking connection must wait out reconnects instead of failing.
 */
export function poolRedisOptions(redisUrl: string, username: string, password: string): PoolRedisOptions {
  const url = new URL(redisUrl);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new Error(`"${url.protocol}" is not a Redis URL scheme`);
  if (url.username || url.password) throw new Error('The Redis URL of a pool worker must not carry credentials; the pool credential is used');
  const db = url.pathname.replace(/^\//, '');
  if (db !== '' && db !== '0') throw new Error('Attempt queues live in Redis database 0');
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : 6379,
    ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
    username,
    password,
    maxRetriesPerRequest: null,
  };
}

let scriptsBySha = false;

/**
 * ioredis sends a defined script (BullMQ's are) as EVAL of its whole source the first time
 * on each connection, and as EVALSHA after. A pool user may run only EVALSHA of the scripts
 * the engine loaded, so a pool worker's process sends every defined script by EVALSHA
 * only: a NOSCRIPT (Redis restarted and the placement-service has not loaded them again
 * yet) fails that call, and BullMQ's Worker tries again. Applies to every ioredis client
 * of the process, BullMQ's own included; call it once before making them.
 */
export function sendScriptsByShaOnly(): void {
  if (scriptsBySha) return;
  scriptsBySha = true;
  type ScriptingClient = { scriptsSet: Record<string, { Command: typeof Command }> };
  const defineCommand = Redis.prototype.defineCommand;
  Redis.prototype.defineCommand = function (this: Redis, name, definition) {
    defineCommand.call(this, name, definition);
    // The Script's own Command class is what turns the first EVALSHA on a socket into EVAL.
    (this as unknown as ScriptingClient).scriptsSet[name]!.Command = Command;
  };
}
