import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { mongoUrlFor, redisUrlFor, EMBEDDED_REPLICA_SET } from '@envengine/backing-servers';
import { ADMIN_USERNAME } from './backing-credentials.ts';
import { credentialFilePath, loadOrCreateCredentialFile } from './credentials.ts';
import { WORKSPACE_ROOT } from './service-processes.ts';

/** The ports `npm start` gives its embedded servers (DESIGN.md §3). */
export const DEV_STACK_PORTS = { mongodb: 27017, redis: 6379, temporal: 7233, temporalUi: 8233 } as const;

/** `npm start`'s data directory: ENVENGINE_DATA_DIR, else `.envengine` in the checkout. */
export function devStackDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.ENVENGINE_DATA_DIR ?? join(WORKSPACE_ROOT, '.envengine'));
}

/** Where `npm start` writes its process id, so that the admin command can tell it to reload credentials. */
export function stackPidFile(dataDir: string): string {
  return join(dataDir, 'stack.pid');
}

/**
 * The administrator's URLs of the local stack's servers, for the admin command:
 * MONGO_URL / REDIS_URL when given, else the embedded servers' default ports with the
 * administrator's credential from the data directory.
 */
export function localAdminUrls(env: NodeJS.ProcessEnv = process.env): { mongoUrl: string; redisUrl: string; dataDir: string } {
  const dataDir = devStackDataDir(env);
  const mongoBase = `mongodb://127.0.0.1:${DEV_STACK_PORTS.mongodb}/?replicaSet=${EMBEDDED_REPLICA_SET}`;
  const redisBase = `redis://127.0.0.1:${DEV_STACK_PORTS.redis}`;
  const credentialsOf = <F extends 'mongodb' | 'redis'>(file: F) =>
    existsSync(credentialFilePath(dataDir, file)) ? loadOrCreateCredentialFile(dataDir, file) : undefined;
  const mongo = credentialsOf('mongodb');
  const redis = credentialsOf('redis');
  return {
    dataDir,
    mongoUrl: env.MONGO_URL ?? (mongo ? mongoUrlFor(mongoBase, { username: ADMIN_USERNAME, password: mongo.MONGO_ADMIN_PASSWORD }) : mongoBase),
    redisUrl: env.REDIS_URL ?? (redis ? redisUrlFor(redisBase, { username: ADMIN_USERNAME, password: redis.REDIS_ADMIN_PASSWORD }) : redisBase),
  };
}
