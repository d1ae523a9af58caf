import { POOL_GATE_LIMITS, POOL_USERNAME_PREFIX, PoolMemoryBudget, poolGatePolicy } from '@envengine/attempt-queues';
import { isRedisCluster, parseRedisUrl, type RedisConnection } from '@envengine/redis-connections';
import { startRedisGate, type GateLog, type RedisGate } from '@envengine/redis-gate';

export interface PoolGateSettings {
  host: string;
  port: number;
  maxConnections: number;
  maxConnectionsPerUser: number;
  /** Reply bytes one connection may leave unread before the gate stops passing its commands (`POOL_GATE_MAX_UNREAD_REPLY_BYTES`). */
  maxBufferedReplyBytes: number;
  /** How long a connection may stay over that before it is closed (`POOL_GATE_UNREAD_TIMEOUT_MS`). */
  overBufferedTimeoutMs: number;
  /** Bytes one pool's queue may hold in Redis (`POOL_REDIS_MEMORY_BYTES`). */
  memoryBytesPerPool: number;
}

/**
 * The pool gate: where pool workers reach their queues (PUBLIC_REDIS_URL names it), in
 * front of Redis, passing only the worker's commands (`poolGatePolicy`) within each pool's
 * memory budget. Behind it the engine's Redis, one server or a cluster, whose layout this
 * service's own connection keeps; workers see one server either way.
 */
export async function startPoolGate(redis: RedisConnection, redisUrl: string, settings: PoolGateSettings, log: GateLog): Promise<RedisGate> {
  const target = parseRedisUrl(redisUrl);
  const single = `${target.nodes[0]!.host}:${target.nodes[0]!.port}`;
  const { memoryBytesPerPool, ...listen } = settings;
  // The one line of INFO the gate tells workers (BullMQ checks the server's version).
  const info = (await redis.info('server')) as string;
  const redisVersion = /^redis_version:(\S+)/m.exec(info)?.[1] ?? '7.0.0';
  const budget = new PoolMemoryBudget({ redis, bytesPerPool: memoryBytesPerPool, measureIntervalMs: 1000, log });
  return startRedisGate({
    ...listen,
    policy: poolGatePolicy({ redisVersion, budget }),
    limits: POOL_GATE_LIMITS,
    acceptsUser: (username) => username.startsWith(POOL_USERNAME_PREFIX),
    nodeForSlot: (slot) => (isRedisCluster(redis) ? redis.slots[slot]?.[0] : single),
    cluster: target.cluster,
    layoutChanged: () => {
      if (isRedisCluster(redis)) redis.refreshSlotsCache();
    },
    // A worker sends AUTH first thing; a connection that has not within 10 s is not a worker.
    authTimeoutMs: 10_000,
    tls: target.tls,
    database: target.database,
    log,
  });
}
