import type { Cluster } from 'ioredis';
import { clusterNodes, connectRedis, parseRedisUrl, redisUrlList, whenRedisReady } from '@envengine/redis-connections';
import type { StackInfo } from '@envengine/test-harness';

/**
 * The node (`host:port`) serving a key's slot as master now, and its live replicas, from
 * `CLUSTER NODES` (`CLUSTER SLOTS` leaves out a replica that has had no data yet).
 */
export async function slotOwners(admin: Cluster, key: string): Promise<{ master: string; replicas: string[] }> {
  const slot = Number(await admin.call('CLUSTER', 'KEYSLOT', key));
  const nodes = await clusterNodes(admin);
  const serves = (ranges: string[]) =>
    ranges.some((range) => {
      const [from, to = from] = range.split('-').map(Number);
      return from! <= slot && slot <= to!;
    });
  const master = nodes.find((node) => node.flags.includes('master') && !node.flags.includes('fail') && serves(node.slots));
  if (!master) throw new Error(`no live master serves slot ${slot}`);
  const replicas = nodes.filter((node) => node.masterId === master.id && !node.flags.includes('fail')).map((node) => node.address);
  return { master: master.address, replicas };
}

/** The URL of the one server that holds `key` (on a Redis Cluster, its master now), without a credential. */
export async function redisServerHolding(stack: StackInfo, key: string): Promise<string> {
  if (!parseRedisUrl(stack.redisServerUrl).cluster) return stack.redisServerUrl;
  const admin = connectRedis(stack.redisUrl, { maxRetriesPerRequest: 3 }) as Cluster;
  try {
    await whenRedisReady(admin);
    const { master } = await slotOwners(admin, key);
    const url = redisUrlList(stack.redisServerUrl).find((node) => node.endsWith(`//${master}`));
    if (!url) throw new Error(`${master} is not among the stack's Redis nodes`);
    return url;
  } finally {
    admin.disconnect();
  }
}
