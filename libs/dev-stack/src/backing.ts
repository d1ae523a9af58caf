import {
  startMongo,
  startRedis,
  startTemporal,
  type BackingServer,
  type MongoAuth,
  type RedisAcl,
  type Reporter,
} from '@envengine/backing-servers';

export interface BackingServers {
  mongo: BackingServer;
  redis: BackingServer;
  temporal: BackingServer;
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
  redisUrl?: string;
  temporalAddress?: string;
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

/** Temporal, a MongoDB-wire server and Redis, each obtained in the order of DESIGN.md §3. */
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
      report: options.report,
    });
    started.push(mongo);
    const redis = await startRedis({
      url: options.redisUrl,
      dataDir: options.dataDir,
      port: fixed ? 6379 : undefined,
      persist: options.persistRedis ?? true,
      acl: options.redisAcl,
      maxMemoryMb: options.redisMaxMemoryMb,
      report: options.report,
    });
    started.push(redis);
    const temporal = await startTemporal({
      address: options.temporalAddress,
      dataDir: options.dataDir,
      port: fixed ? 7233 : undefined,
      uiPort: fixed ? 8233 : undefined,
      headless: options.temporalHeadless,
      report: options.report,
    });
    started.push(temporal);
    return {
      mongo,
      redis,
      temporal,
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
