import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { z } from 'zod';

/**
 * What an ioredis Cluster client sends besides its own commands (ACL grants for users that
 * get no command category): the layout (`CLUSTER SLOTS`), its ready check (`CLUSTER INFO`)
 * and READONLY on connections to replicas. A server that is not a cluster refuses them.
 */
export const REDIS_CLUSTER_CLIENT_COMMANDS: readonly string[] = ['cluster|slots', 'cluster|info', 'readonly'];

/** One server, or a Redis Cluster: the engine's code takes either. */
export type RedisConnection = Redis | Cluster;

export interface RedisNodeAddress {
  host: string;
  port: number;
}

/**
 * Where Redis is, from a `REDIS_URL`: one `redis://` (or `rediss://`) URL for one server,
 * or several separated by commas for a Redis Cluster, each a node to learn the cluster's
 * layout from (`redis://10.0.0.5:7000,redis://10.0.0.6:7000`). A list is how every
 * `*_URL` names replicas here; a cluster is named by two or more nodes so that a node
 * being down does not stop a client from finding the others.
 */
export interface RedisTarget {
  nodes: RedisNodeAddress[];
  cluster: boolean;
  tls: boolean;
  username?: string;
  password?: string;
  /** Always 0 for a cluster (it has no other). */
  database: number;
}

/** Splits a list of URLs before each scheme, so that a `,` inside a password stays in it. */
export function redisUrlList(url: string): string[] {
  return url
    .split(/,(?=\s*rediss?:\/\/)/)
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/**
 * A `REDIS_URL`-like setting, checked at start-up as `parseRedisUrl` reads it. `withCredential`
 * false: a URL that carries a user or password is refused (one told to pool workers).
 */
export function redisUrlSetting(whatFor: string, options: { withCredential?: boolean } = {}) {
  return z.string({ message: `is required (${whatFor})` }).superRefine((url, context) => {
    try {
      const target = parseRedisUrl(url);
      if (options.withCredential === false && (target.username || target.password)) {
        context.addIssue({ code: 'custom', message: 'must carry no credential: each pool signs in as its own user' });
      }
    } catch (error) {
      context.addIssue({ code: 'custom', message: (error as Error).message.replace(/^REDIS_URL: /, '') });
    }
  });
}

export function parseRedisUrl(url: string): RedisTarget {
  const notRedis = 'REDIS_URL: must be a redis:// or rediss:// URL (a Redis Cluster: its nodes, separated by commas)';
  const urls = redisUrlList(url).map((part) => {
    if (!URL.canParse(part)) throw new Error(notRedis);
    return new URL(part);
  });
  if (urls.length === 0 || urls.some((part) => part.protocol !== 'redis:' && part.protocol !== 'rediss:')) throw new Error(notRedis);
  if (new Set(urls.map((part) => part.protocol)).size > 1) throw new Error("REDIS_URL: a cluster's nodes must be all redis:// or all rediss://");
  const credentials = new Set(urls.filter((part) => part.username || part.password).map((part) => `${part.username}:${part.password}`));
  if (credentials.size > 1) throw new Error("REDIS_URL: a cluster's nodes must carry one credential (or only the first carries it)");
  const withCredential = urls.find((part) => part.username || part.password);
  const cluster = urls.length > 1;
  const dbs = new Set(urls.map((part) => part.pathname.replace(/^\//, '') || '0'));
  const database = Number([...dbs][0]);
  if (dbs.size > 1 || !Number.isInteger(database) || database < 0) throw new Error('REDIS_URL: one database number, as /<n>');
  if (cluster && database !== 0) throw new Error('REDIS_URL: a Redis Cluster has database 0 only');
  return {
    nodes: urls.map((part) => ({ host: part.hostname.replace(/^\[(.*)\]$/, '$1'), port: part.port ? Number(part.port) : 6379 })),
    cluster,
    tls: urls[0]!.protocol === 'rediss:',
    ...(withCredential?.username ? { username: decodeURIComponent(withCredential.username) } : {}),
    ...(withCredential?.password ? { password: decodeURIComponent(withCredential.password) } : {}),
    database,
  };
}

/**
 * A client for `url` with the given ioredis options: a `Redis`, or a `Cluster` whose
 * connection to each node takes them (and whose own offline queue and ready check follow
 * them). A BullMQ `connection` takes either. `credential` replaces the URL's (a pool
 * worker signs in as its own user only).
 */
export function connectRedis(url: string, options: RedisOptions = {}, credential?: { username: string; password: string }): RedisConnection {
  const target = parseRedisUrl(url);
  const auth = credential
    ? { username: credential.username, password: credential.password }
    : target.username || target.password
      ? { username: target.username, password: target.password }
      : {};
  const nodeOptions: RedisOptions = { ...options, ...auth, ...(target.tls ? { tls: {} } : {}) };
  if (!target.cluster) return new Redis({ ...nodeOptions, host: target.nodes[0]!.host, port: target.nodes[0]!.port, db: target.database });
  const { enableOfflineQueue, lazyConnect, retryStrategy, enableReadyCheck, ...perNode } = nodeOptions;
  const clusterOptions: ClusterOptions = {
    redisOptions: perNode,
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableReadyCheck === undefined ? {} : { enableReadyCheck }),
    // Gives up as a single client's retryStrategy does (a probe); otherwise keeps trying.
    ...(retryStrategy === undefined ? {} : { clusterRetryStrategy: (times: number) => retryStrategy?.(times) ?? null }),
  };
  return new Cluster(target.nodes, clusterOptions);
}

export function isRedisCluster(connection: RedisConnection): connection is Cluster {
  return connection instanceof Cluster;
}

/**
 * Every server behind a connection: the one server, or each node of a cluster the client
 * knows of. ACL users and the script cache are each node's own, so they are made on each.
 */
export function redisServers(connection: RedisConnection): Redis[] {
  return isRedisCluster(connection) ? connection.nodes('all') : [connection];
}

export interface ClusterNode {
  id: string;
  /** `host:port`, as the node announces it. */
  address: string;
  flags: string[];
  /** The master's id for a replica; undefined for a master. */
  masterId: string | undefined;
  /** Slot ranges a master serves: `0-5460`, `5461`. */
  slots: string[];
}

/** The cluster's nodes as `CLUSTER NODES` lists them (asked of any node). */
export async function clusterNodes(cluster: Cluster): Promise<ClusterNode[]> {
  // `<id> <host:port@bus> <flags> <master id or -> <ping> <pong> <epoch> <link> <slot ranges…>`
  return String(await cluster.call('CLUSTER', 'NODES'))
    .trim()
    .split('\n')
    .map((line) => line.split(' '))
    .map(([id, address, flags, masterId, , , , , ...slots]) => ({
      id: id ?? '',
      address: (address ?? '').split('@')[0]!,
      flags: (flags ?? '').split(','),
      masterId: masterId && masterId !== '-' ? masterId : undefined,
      slots,
    }));
}

export interface RedisServers {
  /** Each server, with whether it is a master now (the one server of a `Redis` is). */
  servers: Array<{ server: Redis; address: string; master: boolean }>;
  /** Closes the connections made for this call (not the client's own). */
  release(): void;
}

/**
 * Every server of a Redis Cluster as the cluster itself lists them (`CLUSTER NODES`), not
 * only the ones its client knows: `CLUSTER SLOTS`, where the client learns the layout,
 * leaves out a replica that has had no data yet, and that replica may be the master a
 * moment later. Nodes marked failed are left out. A node the client has no connection to
 * gets one of its own, with the client's options; `release()` closes those. A cluster
 * client that is not ready fails the call.
 */
export async function everyRedisServer(connection: RedisConnection): Promise<RedisServers> {
  if (!isRedisCluster(connection)) return { servers: [{ server: connection, address: `${connection.options.host}:${connection.options.port}`, master: true }], release: () => undefined };
  // At once, as a single server's commands fail while it is away (no waiting on a reconnect).
  if (connection.status !== 'ready') throw new Error(`Redis Cluster: not connected (${connection.status})`);
  const known = new Map(connection.nodes('all').map((server) => [`${server.options.host}:${server.options.port}`, server]));
  const made: Redis[] = [];
  const listed = (await clusterNodes(connection))
    .filter((node) => node.address && !node.flags.some((flag) => ['fail', 'fail?', 'noaddr', 'handshake'].includes(flag)));
  const servers = listed.map(({ address, flags }) => {
    let server = known.get(address);
    if (!server) {
      const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
      server = new Redis({ ...connection.options.redisOptions, host, port, lazyConnect: false });
      server.on('error', () => undefined); // its command's failure is the answer
      made.push(server);
    }
    return { server, address, master: flags.includes('master') };
  });
  return { servers, release: () => made.forEach((server) => server.disconnect()) };
}

/** The masters: where keys are, for scans. */
export function redisMasters(connection: RedisConnection): Redis[] {
  return isRedisCluster(connection) ? connection.nodes('master') : [connection];
}

/** Resolves once the client is ready (a cluster's: once it knows every node), or rejects when it gives up. */
export async function whenRedisReady(connection: RedisConnection): Promise<void> {
  if (connection.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const ended = () => reject(new Error('Redis: the connection ended before it was ready'));
    connection.once('ready', () => {
      connection.off('end', ended);
      resolve();
    });
    connection.once('end', ended);
  });
}

/** Every key (SCAN, on each master of a cluster), with the server that holds it. */
export async function* everyRedisKey(connection: RedisConnection): AsyncGenerator<{ server: Redis; key: string }> {
  await whenRedisReady(connection);
  for (const server of redisMasters(connection)) {
    let cursor = '0';
    do {
      const [next, keys] = await server.scan(cursor, 'COUNT', 500);
      cursor = next;
      for (const key of keys) yield { server, key };
    } while (cursor !== '0');
  }
}
