import { Cluster, Command, Redis, type RedisOptions } from 'ioredis';
import { connectRedis, parseRedisUrl, type RedisConnection, type RedisTarget } from '@envengine/redis-connections';

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
 * ioredis options for a pool worker's BullMQ connections to one Redis server: `new
 * Redis(options)` or a Worker's `connection`. The credential is the pool's own, so a URL
 * that carries one is refused rather than silently preferred (ioredis lets the URL's win);
 * database 0 only, where the queues are (the pool user has no SELECT).
 * `maxRetriesPerRequest: null`: BullMQ's blocking connection must wait out reconnects
 * instead of failing.
 */
export function poolRedisOptions(redisUrl: string, username: string, password: string): PoolRedisOptions {
  const target = poolRedisTarget(redisUrl);
  if (target.cluster) throw new Error('This Redis URL names a cluster: connect with connectPoolRedis');
  return {
    host: target.nodes[0]!.host,
    port: target.nodes[0]!.port,
    ...(target.tls ? { tls: {} } : {}),
    username,
    password,
    maxRetriesPerRequest: null,
  };
}

/**
 * A pool worker's connection to the queues: one server, or a Redis Cluster when the
 * credential's URL lists its nodes, signed in as the pool's own user, under the rules of
 * `poolRedisOptions`. `options` adds to them (tests give up sooner).
 */
export function connectPoolRedis(redisUrl: string, credential: { username: string; password: string }, options: RedisOptions = {}): RedisConnection {
  poolRedisTarget(redisUrl);
  return connectRedis(redisUrl, { maxRetriesPerRequest: null, ...options }, credential);
}

function poolRedisTarget(redisUrl: string): RedisTarget {
  const target = parseRedisUrl(redisUrl);
  if (target.username || target.password) throw new Error('The Redis URL of a pool worker must not carry credentials; the pool credential is used');
  if (target.database !== 0) throw new Error('Attempt queues live in Redis database 0');
  return target;
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
  // A Cluster defines its scripts itself and hands each node the command it made.
  for (const client of [Redis, Cluster]) {
    const defineCommand = client.prototype.defineCommand;
    client.prototype.defineCommand = function (this: Redis | Cluster, name, definition) {
      defineCommand.call(this, name, definition);
      // The Script's own Command class is what turns the first EVALSHA on a socket into EVAL.
      (this as unknown as ScriptingClient).scriptsSet[name]!.Command = Command;
    };
  }
}
