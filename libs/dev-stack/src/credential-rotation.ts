import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { connectRedis, everyRedisServer, isRedisCluster } from '@envengine/redis-connections';
import { mongoUrlFor, redisAclFile, redisPasswordHash, redisUrlFor } from '@envengine/backing-servers';
import { ADMIN_USERNAME, MONGO_SCOPE_USERS, redisAcl } from './backing-credentials.ts';
import { credentialFilePath, loadOrCreateCredentialFile, newCredentialValues, saveCredentialFile, ROTATABLE_CREDENTIAL_FILES } from './credentials.ts';
import { readRunningStackFile } from './local-stack.ts';

export interface RotationTarget {
  dataDir: string;
  /** The servers' addresses, without a credential (the administrator's is read from the data directory). */
  mongoUrl: string;
  redisUrl: string;
  /** Progress lines; never a credential. */
  report: (line: string) => void;
}

/**
 * `credentials rotate <mongodb|redis|internal>`: new values are set on the running server
 * first (its open connections carry on), then written to the credentials file. The caller
 * then restarts the services with them (`RunningStack.reloadCredentials`, or SIGHUP to
 * `npm start`: `signalRunningStack`). A failure before the file is written leaves the old
 * credentials working.
 */
export async function rotateCredentials(target: RotationTarget, file: (typeof ROTATABLE_CREDENTIAL_FILES)[number]): Promise<void> {
  const { dataDir } = target;
  const path = credentialFilePath(dataDir, file);
  if (!existsSync(path)) throw new Error(`${path} does not exist: start the stack once (npm start) to create the credentials`);
  const current = loadOrCreateCredentialFile(dataDir, file);
  if (file === 'mongodb') {
    const next = newCredentialValues('mongodb');
    // The keyfile is read by mongod at its start; the running one keeps its own.
    next.MONGO_REPLICA_SET_KEY = (current as typeof next).MONGO_REPLICA_SET_KEY;
    await rotateMongo(target.mongoUrl, current as typeof next, next);
    saveCredentialFile(dataDir, 'mongodb', next);
  } else if (file === 'redis') {
    const next = newCredentialValues('redis');
    await rotateRedis(target.redisUrl, dataDir, current as typeof next, next);
    saveCredentialFile(dataDir, 'redis', next);
  } else {
    saveCredentialFile(dataDir, 'internal', newCredentialValues('internal'));
  }
  target.report(`rotated the ${file} credentials in ${path}`);
}

async function rotateMongo(base: string, current: Record<string, string>, next: Record<string, string>): Promise<void> {
  const client = new MongoClient(mongoUrlFor(base, { username: ADMIN_USERNAME, password: current.MONGO_ADMIN_PASSWORD! }), { serverSelectionTimeoutMS: 5000 });
  try {
    await client.connect().catch((error: Error) => {
      throw new Error(`MongoDB of the local stack is not reachable with the current credentials (${error.message}); is the stack running?`);
    });
    const admin = client.db('admin');
    for (const user of Object.values(MONGO_SCOPE_USERS)) await admin.command({ updateUser: user.username, pwd: next[user.password] });
    // The administrator last: this connection is already authenticated and stays so.
    await admin.command({ updateUser: ADMIN_USERNAME, pwd: next.MONGO_ADMIN_PASSWORD });
  } finally {
    await client.close();
  }
}

async function rotateRedis(base: string, dataDir: string, current: Record<string, string>, next: Record<string, string>): Promise<void> {
  // One server, or every node of a Redis Cluster (each keeps its own users).
  const redis = connectRedis(redisUrlFor(base, { username: ADMIN_USERNAME, password: current.REDIS_ADMIN_PASSWORD! }), {
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect().catch((error: Error) => {
      throw new Error(`Redis of the local stack is not reachable with the current credentials (${error.message}); is the stack running?`);
    });
    const acl = redisAcl(next as Parameters<typeof redisAcl>[0]);
    // Every node the cluster lists, replicas its client has not met included.
    const { servers, release } = await everyRedisServer(redis);
    try {
      for (const { server } of servers) {
        // One password per user at a time: `resetpass` drops the old one, open connections carry on.
        for (const user of [...acl.users, acl.admin]) await server.call('ACL', 'SETUSER', user.username, 'resetpass', redisPasswordHash(user.password));
        if (isRedisCluster(redis)) {
          // A replica signs in to its master as the administrator (kept in the node's config
          // file for its restarts), and each node's ACL file is what it loads at a restart
          // (pool users included, so it is saved from memory, not rewritten).
          await server.call('CONFIG', 'SET', 'masterauth', acl.admin.password);
          await server.call('CONFIG', 'REWRITE');
          await server.call('ACL', 'SAVE');
        }
      }
    } finally {
      release();
    }
    // What a restarted Redis loads: the same users with the new passwords.
    const aclFile = join(dataDir, 'redis', 'users.acl');
    if (!isRedisCluster(redis) && existsSync(aclFile)) writeFileSync(aclFile, redisAclFile(acl), { mode: 0o600 });
  } finally {
    redis.disconnect();
  }
}

/** Tells `npm start` of this data directory (SIGHUP) to restart its services with the credentials now in it. */
export function signalRunningStack(dataDir: string, report: (line: string) => void): void {
  const running = readRunningStackFile(dataDir);
  if (!running) {
    report('npm start is not running: it uses the new credentials at its next start.');
    return;
  }
  const { pid } = running;
  try {
    process.kill(pid, 'SIGHUP');
    report(`told the running stack (pid ${pid}) to restart its services with the new credentials`);
  } catch {
    report(`no stack runs as pid ${pid} any more: the new credentials are used at the next start`);
  }
}
