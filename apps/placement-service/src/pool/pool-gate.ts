import { POOL_GATE_LIMITS, POOL_USERNAME_PREFIX, poolGatePolicy } from '@envengine/attempt-queues';
import { isRedisCluster, parseRedisUrl, type RedisConnection } from '@envengine/redis-connections';
import { startRedisGate, type GateLog, type RedisGate } from '@envengine/redis-gate';

/**
 * The pool gate: where pool workers reach their queues (PUBLIC_REDIS_URL names it), in
 * front of Redis, passing only the worker's commands (`poolGatePolicy`). Behind it the
 * engine's Redis, one server or a cluster, whose layout this service's own connection
 * keeps; workers see one server either way.
 */
export function startPoolGate(
  redis: RedisConnection,
  redisUrl: string,
  listen: { host: string; port: number; maxConnections: number; maxConnectionsPerUser: number },
  log: GateLog,
): Promise<RedisGate> {
  const target = parseRedisUrl(redisUrl);
  const single = `${target.nodes[0]!.host}:${target.nodes[0]!.port}`;
  return startRedisGate({
    ...listen,
    policy: poolGatePolicy(),
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
