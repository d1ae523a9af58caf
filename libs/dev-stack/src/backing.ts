import {
  startMongo,
  startObjectStore,
  startRedis,
  startRedisCluster,
  startTemporal,
  startTemporalCluster,
  type BackingServer,
  type MongoAuth,
  type MongoReplicaSet,
  type ObjectStoreAdmin,
  type ObjectStoreServer,
  type RedisAcl,
  type RedisClusterServer,
  type Reporter,
  type TemporalClusterServer,
} from '@envengine/backing-servers';

export interface BackingServers {
  /** With `members` when the embedded replica set has several (`mongoMembers`). */
  mongo: BackingServer & { members?: MongoReplicaSet['members'] };
  /** One server, or in the cluster profile a Redis Cluster (with its `nodes`). */
  redis: BackingServer | RedisClusterServer;
  /** The dev server (a process), or in the cluster profile the cluster (with its `parts`). */
  temporal: BackingServer | TemporalClusterServer;
  /** The S3-compatible store (SeaweedFS or S3_URL); absent when the stack runs without one. */
  s3?: ObjectStoreServer;
  /** What the embedded servers were started with, to start one again the same way (tests of restarts). */
  mongoAuth?: MongoAuth;
  redisAcl?: RedisAcl;
  redisMaxMemoryMb?: number;
  stop(): Promise<void>;
}

export interface BackingServerOptions {
  dataDir: string;
  report: Reporter;
  /** Fixed ports (the dev stack's defaults) or free ones (tests). */
  ports: 'default' | 'random';
  mongoUrl?: string;
  /** Members of an embedded MongoDB replica set (default 1; 3 survives a member's death). */
  mongoMembers?: number;
  /** MongoDB's test commands (fail points), for tests only. */
  mongoTestCommands?: boolean;
  /** MongoDB's TTL monitor's period in seconds (default MongoDB's 60), for tests of a retention. */
  mongoTtlMonitorSeconds?: number;
  redisUrl?: string;
  /**
   * A Redis Cluster of `masters` masters with `replicasPerMaster` replicas each, instead of
   * one server; ignored with `redisUrl` (which may itself list a cluster's nodes).
   */
  redisCluster?: { masters: number; replicasPerMaster: number };
  temporalAddress?: string;
  /**
   * The cluster profile's Temporal (server on PostgreSQL, a process per service) instead of
   * the dev server, with the PostgreSQL role's password; ignored with `temporalAddress`.
   */
  temporalCluster?: { postgresPassword: string };
  /** An S3-compatible store to use instead of starting SeaweedFS. */
  s3Url?: string;
  /** With `s3Url`: that store's IAM API, when it is not on its S3 endpoint (S3_IAM_URL). */
  s3IamUrl?: string;
  /** The object store's administrator keys; no object store is started or used without them. */
  objectStore?: ObjectStoreAdmin;
  /** Run Temporal without its web UI (tests). */
  temporalHeadless?: boolean;
  /** Keep Redis data across restarts. */
  persistRedis?: boolean;
  /** Users of an embedded MongoDB (with `--auth`); a server given by URL is used as given. */
  mongoAuth?: MongoAuth;
  /** The ACL of an embedded Redis (`default` off). */
  redisAcl?: RedisAcl;
  /** `maxmemory` of an embedded Redis, with `noeviction`. */
  redisMaxMemoryMb?: number;
}

/** The embedded store's S3 port under `npm start`. */
export const DEFAULT_S3_PORT = 8333;
/** The bucket of the engine's own store, made at its start: `s3://lake/<prefix>` in docs/operations.md#object-storage. */
export const ENGINE_BUCKET = 'lake';

/** Temporal, a MongoDB-wire server, Redis and (when asked) the object store, each obtained in the order of docs/design.md#running-it. */
export async function startBackingServers(options: BackingServerOptions): Promise<BackingServers> {
  const fixed = options.ports === 'default';
  const started: BackingServer[] = [];
  try {
    // Started one after another: a first run may build two servers with Go, and two
    // builds at once on a small machine take longer than one after the other.
    const mongo = await startMongo({
      url: options.mongoUrl,
      dataDir: options.dataDir,
      port: fixed ? 27017 : undefined,
      auth: options.mongoAuth,
      members: options.mongoMembers,
      enableTestCommands: options.mongoTestCommands,
      ttlMonitorSeconds: options.mongoTtlMonitorSeconds,
      report: options.report,
    });
    started.push(mongo);
    // What one server and a cluster's nodes are started with alike.
    const redisSettings = {
      dataDir: options.dataDir,
      persist: options.persistRedis ?? true,
      acl: options.redisAcl,
      maxMemoryMb: options.redisMaxMemoryMb,
      report: options.report,
    };
    const redis =
      options.redisCluster && !options.redisUrl
        ? await startRedisCluster({ ...redisSettings, ...options.redisCluster, ports: fixed ? 'default' : undefined })
        : await startRedis({ ...redisSettings, url: options.redisUrl, port: fixed ? 6379 : undefined });
    started.push(redis);
    const temporal =
      options.temporalCluster && !options.temporalAddress
        ? await startTemporalCluster({
            dataDir: options.dataDir,
            ports: options.ports,
            postgresPassword: options.temporalCluster.postgresPassword,
            headless: options.temporalHeadless,
            report: options.report,
          })
        : await startTemporal({
            address: options.temporalAddress,
            dataDir: options.dataDir,
            port: fixed ? 7233 : undefined,
            uiPort: fixed ? 8233 : undefined,
            headless: options.temporalHeadless,
            report: options.report,
          });
    started.push(temporal);
    let s3: ObjectStoreServer | undefined;
    if (options.objectStore) {
      s3 = await startObjectStore({
        url: options.s3Url,
        iamUrl: options.s3IamUrl,
        dataDir: options.dataDir,
        port: fixed ? DEFAULT_S3_PORT : undefined,
        admin: options.objectStore,
        bucket: ENGINE_BUCKET,
        report: options.report,
      });
      started.push(s3);
    }
    return {
      mongo,
      redis,
      temporal,
      s3,
      mongoAuth: options.mongoAuth,
      redisAcl: options.redisAcl,
      redisMaxMemoryMb: options.redisMaxMemoryMb,
      stop: async () => {
        await Promise.all(started.map((server) => server.stop()));
      },
    };
  } catch (error) {
    await Promise.all(started.map((server) => server.stop()));
    throw error;
  }
}
