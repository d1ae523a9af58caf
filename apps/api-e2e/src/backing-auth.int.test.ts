import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';
import { connectRedis, parseRedisUrl, redisUrlList, type RedisConnection } from '@envengine/redis-connections';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RATE_LIMIT_KEY_PREFIX, TOKEN_REVOKED_CHANNEL } from '@envengine/api-tokens';
import { ENVIRONMENT_RETIRED_CHANNEL, INTERNAL_HEADERS } from '@envengine/contracts';
import { freePort, mongoUrlFor, redisPasswordHash, redisUrlFor, startMongo, withoutCredential, type BackingServer } from '@envengine/backing-servers';
import {
  ADMIN_USERNAME,
  credentialFilePath,
  credentialsDir,
  loadOrCreateCredentials,
  mongoAuth,
  MONGO_SCOPE_USERS,
  redisEngineUsers,
  rotateCredentials,
  SERVICE_DATABASES,
  type Credentials,
} from '@envengine/dev-stack';
import { createTenant, startTestStack, type TestStack } from '@envengine/test-harness';

const stack = inject('stack');
const credentials: Credentials = loadOrCreateCredentials(stack.dataDir);
const mongoServer = withoutCredential(stack.mongoUrl);
const firstNode = redisUrlList(stack.redisServerUrl)[0]!;
const opened: Array<{ close(): Promise<unknown> } | { disconnect(): void }> = [];

afterAll(async () => {
  for (const client of opened) {
    if ('disconnect' in client) client.disconnect();
    else await client.close().catch(() => undefined);
  }
});

type Scope = keyof typeof SERVICE_DATABASES;
const SCOPES = Object.keys(MONGO_SCOPE_USERS) as Scope[];

function mongoClient(url: string): MongoClient {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5000 });
  opened.push(client);
  return client;
}

function scopeUser(scope: Scope, from: Credentials = credentials): { username: string; password: string } {
  return { username: MONGO_SCOPE_USERS[scope].username, password: from.mongodb[MONGO_SCOPE_USERS[scope].password] };
}

/** What MongoDB answered: `ok`, or the error's code name. */
async function mongoAnswer(operation: Promise<unknown>): Promise<string> {
  return operation.then(
    () => 'ok',
    (error: { codeName?: string; message: string }) => error.codeName ?? error.message,
  );
}

/** The ACL file each Redis server loads: the one server's, or each node's of a Redis Cluster. */
function redisAclFiles(dataDir: string, redisUrl: string): string[] {
  const nodes = redisUrlList(redisUrl);
  return nodes.length > 1 ? nodes.map((_, index) => join(dataDir, 'redis-cluster', `node-${index}`, 'users.acl')) : [join(dataDir, 'redis', 'users.acl')];
}

/**
 * A Redis connection that sends nothing by itself (no ready check), so each refusal is the
 * command's own. On a Redis Cluster a user's connection is a cluster client (a command goes
 * to the node of its key), and an anonymous one is to the first node (every node has the
 * same users: one refuses as any other).
 */
function redisAs(credential?: { username: string; password: string }): RedisConnection {
  const options = { lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 1, retryStrategy: () => null };
  const client =
    credential && parseRedisUrl(stack.redisServerUrl).cluster
      ? connectRedis(stack.redisServerUrl, options, credential)
      : new Redis(credential ? redisUrlFor(firstNode, credential) : firstNode, options);
  client.on('error', () => undefined);
  opened.push(client);
  return client;
}

async function redisAnswer(client: RedisConnection, ...command: [string, ...(string | number)[]]): Promise<string> {
  return client.call(...command).then(
    (value) => `allowed: ${JSON.stringify(value)}`,
    (error: Error) => error.message,
  );
}

const engineUser = (username: string) => {
  const user = redisEngineUsers(credentials.redis).find((candidate) => candidate.username === username)!;
  return { username: user.username, password: user.password };
};

// Every server command a compromised service must not run, whichever it is.
const SERVER_COMMANDS: Array<[string, ...(string | number)[]]> = [
  ['FLUSHALL'],
  ['FLUSHDB'],
  ['CONFIG', 'GET', 'maxmemory'],
  ['CONFIG', 'SET', 'maxmemory', '0'],
  ['KEYS', '*'],
  ['SHUTDOWN', 'NOSAVE'],
  ['MONITOR'],
  ['ACL', 'LIST'],
  ['ACL', 'GETUSER', ADMIN_USERNAME],
  ['SCRIPT', 'FLUSH'],
  ['CLIENT', 'KILL', 'USER', ADMIN_USERNAME],
];

/** DEBUG is also disabled in Redis 7 by default; ask the ACL itself whether the user could run it. */
async function aclAllowsDebug(username: string): Promise<string> {
  const admin = redisAs({ username: ADMIN_USERNAME, password: credentials.redis.REDIS_ADMIN_PASSWORD });
  return String(await admin.call('ACL', 'DRYRUN', username, 'DEBUG', 'SLEEP', '0'));
}

describe('MongoDB authenticates', () => {
  it('refuses an unauthenticated client: no database list, no read', async () => {
    const anonymous = mongoClient(mongoServer);
    expect(await mongoAnswer(anonymous.db('admin').command({ listDatabases: 1 }))).toBe('Unauthorized');
    expect(await mongoAnswer(anonymous.db(stack.databases.gateway).collection('api_tokens').findOne({}))).toBe('Unauthorized');
    // Positive control: the administrator lists them.
    expect(await mongoAnswer(mongoClient(stack.mongoUrl).db('admin').command({ listDatabases: 1 }))).toBe('ok');
  });

  it('refuses a wrong password', async () => {
    const wrong = mongoClient(mongoUrlFor(mongoServer, { username: 'gateway', password: 'not-the-password' }));
    await expect(wrong.connect()).rejects.toThrow(/Authentication failed/);
  });

  for (const scope of SCOPES) {
    it(`gives the ${scope} user its own database and nothing else`, async () => {
      const client = mongoClient(mongoUrlFor(mongoServer, scopeUser(scope)));
      const own = client.db(stack.databases[scope]).collection('auth_probe');
      // Positive control: it reads and writes its own database.
      expect(await mongoAnswer(own.insertOne({ probe: scope }))).toBe('ok');
      expect(await own.countDocuments({ probe: scope })).toBe(1);
      expect(await mongoAnswer(own.deleteMany({ probe: scope }))).toBe('ok');
      for (const other of SCOPES.filter((candidate) => candidate !== scope)) {
        const theirs = client.db(stack.databases[other]);
        expect(`${other} find: ${await mongoAnswer(theirs.collection('auth_probe').findOne({}))}`).toBe(`${other} find: Unauthorized`);
        expect(`${other} insert: ${await mongoAnswer(theirs.collection('auth_probe').insertOne({ from: scope }))}`).toBe(`${other} insert: Unauthorized`);
        expect(`${other} list: ${await mongoAnswer(theirs.listCollections().toArray())}`).toBe(`${other} list: Unauthorized`);
      }
      // It sees no other database in the list (MongoDB lists only what a user may read).
      const listed = (await client.db('admin').command({ listDatabases: 1, nameOnly: true })) as { databases: Array<{ name: string }> };
      expect(listed.databases.map((database) => database.name).filter((name) => name !== stack.databases[scope])).toEqual([]);
      for (const command of [{ usersInfo: 1 }, { createUser: 'x', pwd: 'y', roles: ['root'] }, { replSetGetConfig: 1 }, { shutdown: 1 }]) {
        expect(`${Object.keys(command)[0]}: ${await mongoAnswer(client.db('admin').command(command))}`).toBe(`${Object.keys(command)[0]}: Unauthorized`);
      }
      expect(await mongoAnswer(client.db(stack.databases[scope]).dropDatabase())).toBe('Unauthorized');
    });
  }
});

describe('Redis authenticates', () => {
  it('has no default user: an unauthenticated or wrongly authenticated connection runs nothing', async () => {
    const anonymous = redisAs();
    expect(await redisAnswer(anonymous, 'PING')).toMatch(/^NOAUTH/);
    expect(await redisAnswer(anonymous, 'GET', 'envengine:anything')).toMatch(/^NOAUTH/);
    expect(await redisAnswer(anonymous, 'AUTH', 'default', '')).toMatch(/WRONGPASS/);
    expect(await redisAnswer(anonymous, 'AUTH', 'gateway', 'not-the-password')).toMatch(/WRONGPASS/);
    // After a refused AUTH the connection is still nobody's.
    expect(await redisAnswer(anonymous, 'PING')).toMatch(/^NOAUTH/);
    // Positive control: the administrator is let in.
    expect(await redisAnswer(redisAs({ username: ADMIN_USERNAME, password: credentials.redis.REDIS_ADMIN_PASSWORD }), 'PING')).toBe('allowed: "PONG"');
  });

  it('bounds its memory and refuses writes when full rather than evicting queued attempts', async () => {
    const admin = redisAs({ username: ADMIN_USERNAME, password: credentials.redis.REDIS_ADMIN_PASSWORD });
    expect(await admin.call('CONFIG', 'GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    const [, maxmemory] = (await admin.call('CONFIG', 'GET', 'maxmemory')) as [string, string];
    expect(Number(maxmemory)).toBe(256 * 1024 * 1024);
  });

  it('gives the gateway its revocation channel (to hear and to tell: a token revoked through the API) and its rate-limit buckets, and nothing else', async () => {
    const gateway = redisAs(engineUser('gateway'));
    expect(await redisAnswer(gateway, 'GET', 'envengine:anything')).toMatch(/NOPERM/);
    // Scripts (the shared rate limit) reach the buckets' keys and no other, and run no
    // command the user lacks outside one.
    const script = "return redis.call(ARGV[1], KEYS[1], 'f', 'x')";
    expect(await redisAnswer(gateway, 'EVAL', script, 1, `${RATE_LIMIT_KEY_PREFIX}{probe}`, 'HSET')).toMatch(/^allowed: [01]$/);
    expect(await redisAnswer(gateway, 'EVAL', script, 1, 'envengine:anything', 'HSET')).toMatch(/NOPERM .*access one of the keys/);
    expect(await redisAnswer(gateway, 'EVAL', script, 1, `${RATE_LIMIT_KEY_PREFIX}{probe}`, 'SET')).toMatch(/can't run this command/);
    expect(await redisAnswer(gateway, 'SET', 'envengine:anything', '1')).toMatch(/NOPERM/);
    expect(await redisAnswer(gateway, 'PUBLISH', TOKEN_REVOKED_CHANNEL, 'x')).toMatch(/^allowed: \d+$/);
    expect(await redisAnswer(gateway, 'PUBLISH', ENVIRONMENT_RETIRED_CHANNEL, 'x')).toMatch(/NOPERM/);
    expect(await redisAnswer(gateway, 'PUBLISH', 'envengine:other-channel', 'x')).toMatch(/NOPERM/);
    for (const command of SERVER_COMMANDS) expect(`${command.join(' ')}: ${await redisAnswer(gateway, ...command)}`).toMatch(/: NOPERM/);
    expect(await aclAllowsDebug('gateway')).toMatch(/no permissions to run the 'debug' command/);
    // Subscriptions on connections of their own (a subscribed connection takes no other command).
    const elsewhere = redisAs(engineUser('gateway'));
    await expect(elsewhere.subscribe('envengine:other-channel')).rejects.toThrow(/NOPERM/);
    const revocations = redisAs(engineUser('gateway'));
    expect(await revocations.subscribe(TOKEN_REVOKED_CHANNEL)).toBe(1);
  });

  it("gives the placement-service the engine's keys and pool-user management, and no server command", async () => {
    const placement = redisAs(engineUser('placement'));
    expect(await redisAnswer(placement, 'SET', 'envengine:auth-probe', '1')).toBe('allowed: "OK"');
    expect(await redisAnswer(placement, 'DEL', 'envengine:auth-probe')).toBe('allowed: 1');
    expect(await redisAnswer(placement, 'PUBLISH', TOKEN_REVOKED_CHANNEL, 'probe')).toMatch(/^allowed/);
    expect(await redisAnswer(placement, 'PUBLISH', ENVIRONMENT_RETIRED_CHANNEL, 'probe')).toMatch(/^allowed/);
    expect(await redisAnswer(placement, 'ACL', 'USERS')).toMatch(/^allowed/);
    expect(await redisAnswer(placement, 'GET', 'outside-the-engine')).toMatch(/NOPERM/);
    expect(await redisAnswer(placement, 'PUBLISH', 'another-channel', 'x')).toMatch(/NOPERM/);
    for (const command of SERVER_COMMANDS) expect(`${command.join(' ')}: ${await redisAnswer(placement, ...command)}`).toMatch(/: NOPERM/);
    expect(await aclAllowsDebug('placement')).toMatch(/no permissions to run the 'debug' command/);
  });

  it("gives the engine's runner the local queue only", async () => {
    const runner = redisAs(engineUser('runner'));
    expect(await redisAnswer(runner, 'LLEN', 'envengine:{attempts-local}:wait')).toMatch(/^allowed: \d+/);
    expect(await redisAnswer(runner, 'LLEN', 'envengine:{attempts-ten_01m813w5p0mba0fr1w8mf0qssv}:wait')).toMatch(/NOPERM/);
    expect(await redisAnswer(runner, 'GET', 'envengine:anything')).toMatch(/NOPERM/);
    expect(await redisAnswer(runner, 'PUBLISH', TOKEN_REVOKED_CHANNEL, 'x')).toMatch(/NOPERM/);
    for (const command of SERVER_COMMANDS) expect(`${command.join(' ')}: ${await redisAnswer(runner, ...command)}`).toMatch(/: NOPERM/);
    expect(await aclAllowsDebug('runner')).toMatch(/no permissions to run the 'debug' command/);
    // It hears of environments torn down, and may say nothing on that channel or hear any other.
    expect(await redisAnswer(runner, 'PUBLISH', ENVIRONMENT_RETIRED_CHANNEL, 'x')).toMatch(/NOPERM/);
    await expect(redisAs(engineUser('runner')).subscribe(TOKEN_REVOKED_CHANNEL)).rejects.toThrow(/NOPERM/);
    expect(await redisAs(engineUser('runner')).subscribe(ENVIRONMENT_RETIRED_CHANNEL)).toBe(1);
  });
});

describe('credentials stay private', () => {
  const values = () => Object.values(credentials).flatMap((file) => Object.values(file) as string[]);

  /** Where any of the values occurs among the texts. */
  function occurrences(texts: Array<[string, string]>, needles: string[]): string[] {
    return texts.flatMap(([where, text]) => needles.filter((needle) => text.includes(needle)).map((needle) => `${where} has ${needle.slice(0, 6)}…`));
  }

  it('are kept in files of mode 0600 in a directory of mode 0700', () => {
    expect(statSync(credentialsDir(stack.dataDir)).mode & 0o777).toBe(0o700);
    for (const file of ['mongodb', 'redis', 'internal'] as const) expect(statSync(credentialFilePath(stack.dataDir, file)).mode & 0o777).toBe(0o600);
    const files = redisAclFiles(stack.dataDir, stack.redisServerUrl);
    for (const aclFile of files) {
      expect(statSync(aclFile).mode & 0o777).toBe(0o600);
      const config = join(dirname(aclFile), 'redis.conf');
      if (existsSync(config)) expect(statSync(config).mode & 0o777).toBe(0o600);
    }
    // The ACL file holds hashes only (on a Redis Cluster, each node's config file holds the
    // administrator's password for its replication, and is 0600 too).
    expect(occurrences(files.map((file) => [file, readFileSync(file, 'utf8')]), Object.values(credentials.redis))).toEqual([]);
  });

  it("are in no process's arguments and no log file", () => {
    const commandLines: Array<[string, string]> = [];
    for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
      try {
        commandLines.push([`pid ${pid}`, readFileSync(`/proc/${pid}/cmdline`, 'utf8')]);
      } catch {
        // gone meanwhile
      }
    }
    const logsDir = join(stack.dataDir, 'logs');
    const logs = readdirSync(logsDir).map((name): [string, string] => [name, readFileSync(join(logsDir, name), 'utf8')]);
    expect(commandLines.length).toBeGreaterThan(5);
    const redisLog = stack.serverAddresses['redis-0'] ? 'redis-0.log' : 'redis.log';
    expect(logs.map(([name]) => name)).toEqual(expect.arrayContaining(['gateway.log', 'placement-service.log', 'mongodb.log', redisLog]));
    // Log files a server writes of its own accord (glog, SeaweedFS's, writes `weed.*` under the temp directory unless told not to).
    const ownLogs = readdirSync(tmpdir())
      .filter((name) => name.startsWith('weed.'))
      .flatMap((name): Array<[string, string]> => {
        try {
          return [[name, readFileSync(join(tmpdir(), name), 'utf8')]];
        } catch {
          return [];
        }
      });
    expect(occurrences([...commandLines, ...logs, ...ownLogs], values())).toEqual([]);
    // Positive control: the same scan finds a value where one is.
    const planted = join(mkdtempSync(join(tmpdir(), 'planted-')), 'x.log');
    writeFileSync(planted, `connected with ${credentials.mongodb.MONGO_GATEWAY_PASSWORD}\n`);
    expect(occurrences([['planted', readFileSync(planted, 'utf8')]], values())).toHaveLength(1);
  });

  it('are shown without their secret part', () => {
    expect(withoutCredential('mongodb://gateway:s3cret@127.0.0.1:27017/?replicaSet=rs0&authSource=admin')).toBe('mongodb://127.0.0.1:27017/?replicaSet=rs0&authSource=admin');
    expect(withoutCredential('redis://runner:s3cret@127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
    expect(withoutCredential('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
  });
});

describe('a MongoDB data directory from before authentication', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'envengine-upgrade-'));
  let server: BackingServer | undefined;

  afterAll(async () => {
    await server?.stop();
  });

  it('keeps its data when started with --auth, and is then closed to unauthenticated clients', async () => {
    const port = await freePort();
    server = await startMongo({ dataDir, port, report: () => undefined });
    const before = mongoClient(server.adminUrl);
    await before.db('envengine_placement').collection('environments').insertOne({ name: 'prod', kept: true });
    await before.close();
    await server.stop();

    const upgraded = loadOrCreateCredentials(dataDir);
    const databases = { ...SERVICE_DATABASES };
    server = await startMongo({ dataDir, port, auth: mongoAuth(upgraded.mongodb, databases), report: () => undefined });
    expect(server.adminUrl).not.toBe(server.url);
    const placement = mongoClient(mongoUrlFor(server.url, { username: 'placement', password: upgraded.mongodb.MONGO_PLACEMENT_PASSWORD }));
    expect(await placement.db('envengine_placement').collection('environments').findOne({ name: 'prod' }, { projection: { _id: 0 } })).toEqual({ name: 'prod', kept: true });
    expect(await mongoAnswer(mongoClient(server.url).db('admin').command({ listDatabases: 1 }))).toBe('Unauthorized');
    await server.stop();

    // Started again with an administrator password it does not know: refused at once, with why.
    const other = mongoAuth({ ...upgraded.mongodb, MONGO_ADMIN_PASSWORD: 'another-password' }, databases);
    await expect(startMongo({ dataDir, port, auth: other, report: () => undefined })).rejects.toThrow(/refuses the admin credential/);
    server = undefined;
  });
});

describe('credentials rotate (a stack of its own)', () => {
  let own: TestStack;

  beforeAll(async () => {
    own = await startTestStack({ temporalAddress: stack.temporalAddress });
  });

  afterAll(async () => {
    await own?.stop();
  });

  it('replaces each file of credentials on its server and in the services, and loses no data', async () => {
    const tenant = await createTenant(own.info, 'rotation');
    expect((await tenant.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/p', executor: 'local' })).status).toBe(201);
    const target = { dataDir: own.info.dataDir, mongoUrl: own.servers.mongo.url, redisUrl: own.servers.redis.url, report: () => undefined };

    for (const file of ['mongodb', 'redis', 'internal'] as const) {
      const before = loadOrCreateCredentials(own.info.dataDir);
      await rotateCredentials(target, file);
      const after = loadOrCreateCredentials(own.info.dataDir);
      expect(after[file]).not.toEqual(before[file]);
      await own.reloadCredentials();
      // Everything still served, with what was written before, and writes work.
      expect((await tenant.api.get('/environments/prod')).status).toBe(200);
      expect((await tenant.api.post('/environments', { name: `after-${file}`, storage_prefix: `s3://lake/${file}`, executor: 'local' })).status).toBe(201);

      if (file === 'mongodb') {
        const old = mongoClient(mongoUrlFor(own.servers.mongo.url, { username: 'placement', password: before.mongodb.MONGO_PLACEMENT_PASSWORD }));
        await expect(old.connect()).rejects.toThrow(/Authentication failed/);
        const current = mongoClient(mongoUrlFor(own.servers.mongo.url, { username: 'placement', password: after.mongodb.MONGO_PLACEMENT_PASSWORD }));
        expect(await current.db(own.info.databases['placement-service']).collection('environments').countDocuments({})).toBeGreaterThan(0);
      }
      if (file === 'redis') {
        // On every server (each node of a Redis Cluster).
        const nodes = redisUrlList(own.servers.redis.url);
        for (const node of nodes) {
          const probe = new Redis(node, { lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 1, retryStrategy: () => null });
          probe.on('error', () => undefined);
          opened.push(probe);
          expect(await redisAnswer(probe, 'AUTH', 'gateway', before.redis.REDIS_GATEWAY_PASSWORD)).toMatch(/WRONGPASS/);
          expect(await redisAnswer(probe, 'AUTH', 'gateway', after.redis.REDIS_GATEWAY_PASSWORD)).toBe('allowed: "OK"');
        }
        // A restarted Redis loads the new passwords from its ACL file.
        for (const file of redisAclFiles(own.info.dataDir, own.servers.redis.url)) {
          const text = readFileSync(file, 'utf8');
          expect(text).not.toContain(redisPasswordHash(before.redis.REDIS_GATEWAY_PASSWORD));
          expect(text).toContain(redisPasswordHash(after.redis.REDIS_GATEWAY_PASSWORD));
        }
      }
      if (file === 'internal') {
        const asGateway = (credential: string) =>
          fetch(`${own.info.urls['placement-service']}/api/v1/environments/prod`, {
            headers: { [INTERNAL_HEADERS.credential]: credential, [INTERNAL_HEADERS.tenantId]: tenant.tenantId },
          });
        expect((await asGateway(before.internal.INTERNAL_CREDENTIAL)).status).toBe(401);
        expect((await asGateway(after.internal.INTERNAL_CREDENTIAL)).status).toBe(200);
      }
    }
  });
});
