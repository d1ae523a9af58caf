import { chmodSync, mkdirSync } from 'node:fs';
import { bubblewrapBinary, mongoUrlFor, redisUrlFor, type BackingServer, type ObjectStoreAdmin } from '@envengine/backing-servers';
import { startBackingServers, type BackingServerOptions, type BackingServers } from './backing.ts';
import { mongoAuth, redisAcl, REDIS_USER_OF_SERVICE } from './backing-credentials.ts';
import { loadOrCreateCredentials, type Credentials } from './credentials.ts';
import { startServiceProcesses, type RunningServices, type ServiceConnections } from './service-processes.ts';
import { SERVICE_DATABASES } from './services.ts';

/**
 * `embedded`: one process per server (the Temporal dev server on SQLite), one per deployable.
 * `cluster`: Temporal server on PostgreSQL with a process per service, a three-member
 * MongoDB replica set, a Redis Cluster of three masters with a replica each, and two
 * replicas of every deployable (docs/operations.md#profiles).
 */
export const STACK_PROFILES = ['embedded', 'cluster'] as const;
export type StackProfile = (typeof STACK_PROFILES)[number];

/** What the cluster profile changes when not given otherwise. */
export const CLUSTER_PROFILE_DEFAULTS = { mongoMembers: 3, replicas: 2, redisCluster: { masters: 3, replicasPerMaster: 1 } } as const;

export interface StackOptions extends Omit<BackingServerOptions, 'mongoAuth' | 'redisAcl' | 'objectStore' | 'temporalCluster' | 'redisCluster'> {
  /** Default `embedded`. */
  profile?: StackProfile;
  /** Start (or use, with S3_URL) the object store that serves `s3://` prefixes whose binding names no endpoint. Default true. */
  objectStore?: boolean;
  /** Prefix of every service database, so that stacks can share one server. */
  databasePrefix?: string;
  logLevel?: string;
  /** Extra environment for every service. */
  env?: Record<string, string>;
  /** Processes of each deployable (default 1): see `ServiceProcessOptions.replicas`. */
  replicas?: number;
}

export interface RunningStack {
  servers: BackingServers;
  services: RunningServices;
  /**
   * After `admin credentials rotate`: reads the data directory's credentials again and
   * restarts every service with them (the servers already hold the new ones).
   */
  reloadCredentials(): Promise<void>;
  /** Services first (the gateway before the rest), then the servers. */
  stop(): Promise<void>;
}

/** Redis's `maxmemory` (MiB) when none is given: queued attempts are small; a full Redis refuses writes (`noeviction`). */
export const DEFAULT_REDIS_MAX_MEMORY_MB = 256;

/** Each service's URLs: its own scope's user on an embedded server; the given URL (its credential) otherwise. */
function serviceConnections(servers: BackingServers, credentials: Credentials, databases: RunningServices['databases']): ServiceConnections {
  const auth = mongoAuth(credentials.mongodb, databases);
  const acl = redisAcl(credentials.redis);
  const embedded = (server: BackingServer) => server.source !== 'url';
  const mongoOf = (scope: keyof typeof SERVICE_DATABASES) => {
    if (!embedded(servers.mongo)) return servers.mongo.adminUrl;
    return mongoUrlFor(servers.mongo.url, auth.users.find((user) => user.db === databases[scope])!);
  };
  const redisOf = (service: keyof ServiceConnections['redis']) => {
    if (!embedded(servers.redis)) return servers.redis.adminUrl;
    return redisUrlFor(servers.redis.url, acl.users.find((user) => user.username === REDIS_USER_OF_SERVICE[service])!);
  };
  return {
    mongo: {
      gateway: mongoOf('gateway'),
      'placement-service': mongoOf('placement-service'),
      'deployment-service': mongoOf('deployment-service'),
      'secrets-service': mongoOf('secrets-service'),
    },
    redis: { gateway: redisOf('gateway'), 'placement-service': redisOf('placement-service'), 'attempt-worker': redisOf('attempt-worker') },
  };
}

/** The store's administrator: the operator's keys for a store given by S3_URL, else the generated ones. */
export function objectStoreAdmin(credentials: Credentials): ObjectStoreAdmin {
  const { S3_ADMIN_ACCESS_KEY, S3_ADMIN_SECRET_KEY } = process.env;
  if (S3_ADMIN_ACCESS_KEY && S3_ADMIN_SECRET_KEY) return { accessKeyId: S3_ADMIN_ACCESS_KEY, secretAccessKey: S3_ADMIN_SECRET_KEY };
  return { accessKeyId: credentials.s3.S3_ADMIN_ACCESS_KEY, secretAccessKey: credentials.s3.S3_ADMIN_SECRET_KEY };
}

/**
 * The backing servers, then every service wired to them: what `npm start`, tests and
 * benchmarks run. Embedded servers authenticate with the credentials kept in the data
 * directory (made at first start), and each service gets its own scope's user; a server
 * given by URL is used with the credential in that URL.
 */
export async function startStack(options: StackOptions): Promise<RunningStack> {
  // The engine's runner refuses to run tenants' code without its OS sandbox unless told SANDBOX=off.
  if ((options.env?.['SANDBOX'] ?? process.env.SANDBOX) !== 'off') bubblewrapBinary(options.report);
  // The runners' sandboxes run as an unprivileged user, who must reach the bundle caches in
  // the data directory (a temporary one is made 0700); its files keep their own modes.
  mkdirSync(options.dataDir, { recursive: true });
  chmodSync(options.dataDir, 0o755);
  const credentials = loadOrCreateCredentials(options.dataDir);
  const prefix = options.databasePrefix ?? '';
  const databases = Object.fromEntries(
    Object.entries(SERVICE_DATABASES).map(([name, db]) => [name, `${prefix}${db}`]),
  ) as RunningServices['databases'];
  const auth = mongoAuth(credentials.mongodb, databases);
  const acl = redisAcl(credentials.redis);
  const cluster = options.profile === 'cluster';
  const mongoMembers = options.mongoMembers ?? (cluster ? CLUSTER_PROFILE_DEFAULTS.mongoMembers : undefined);
  const replicas = options.replicas ?? (cluster ? CLUSTER_PROFILE_DEFAULTS.replicas : undefined);
  const servers = await startBackingServers({
    ...options,
    mongoMembers,
    temporalCluster: cluster ? { postgresPassword: credentials.postgres.POSTGRES_TEMPORAL_PASSWORD } : undefined,
    redisCluster: cluster ? CLUSTER_PROFILE_DEFAULTS.redisCluster : undefined,
    mongoAuth: auth,
    redisAcl: acl,
    redisMaxMemoryMb: options.redisMaxMemoryMb ?? DEFAULT_REDIS_MAX_MEMORY_MB,
    objectStore: options.objectStore === false ? undefined : objectStoreAdmin(credentials),
  });
  let services: RunningServices;
  try {
    services = await startServiceProcesses({
      dataDir: options.dataDir,
      ports: options.ports,
      connections: serviceConnections(servers, credentials, databases),
      internalCredentials: credentials.internal,
      temporalAddress: servers.temporal.url,
      objectStore: servers.s3 ? { url: servers.s3.url, iamUrl: servers.s3.iamUrl, admin: objectStoreAdmin(credentials) } : undefined,
      databases,
      logLevel: options.logLevel,
      env: options.env,
      replicas,
    });
  } catch (error) {
    await servers.stop();
    throw error;
  }
  return {
    servers,
    services,
    reloadCredentials: async () => {
      const reloaded = loadOrCreateCredentials(options.dataDir);
      services.setCredentials(serviceConnections(servers, reloaded, databases), reloaded.internal);
      // All together: services that share the internal credential must change it together.
      await services.restartAll();
    },
    stop: async () => {
      await services.stop();
      await servers.stop();
    },
  };
}
