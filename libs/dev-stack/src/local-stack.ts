import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { mongoUrlFor, redisUrlFor, EMBEDDED_REPLICA_SET } from '@envengine/backing-servers';
import { ADMIN_USERNAME } from './backing-credentials.ts';
import { credentialFilePath, loadOrCreateCredentialFile } from './credentials.ts';
import { WORKSPACE_ROOT } from './service-processes.ts';

/** The ports `npm start` gives its embedded servers (docs/design.md#running-it). */
export const DEV_STACK_PORTS = { mongodb: 27017, redis: 6379, temporal: 7233, temporalUi: 8233 } as const;

/** `npm start`'s data directory: ENVENGINE_DATA_DIR, else `.envengine` in the checkout. */
export function devStackDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.ENVENGINE_DATA_DIR ?? join(WORKSPACE_ROOT, '.envengine'));
}

/**
 * What a running `npm start` writes into its data directory (and removes when it stops):
 * its process id, so that the admin command can tell it to reload credentials, and its
 * servers' addresses, without any credential.
 */
export const RunningStackFile = z.object({
  pid: z.number().int().positive(),
  mongodb: z.string(),
  redis: z.string(),
  gateway: z.string(),
});
export type RunningStackFile = z.infer<typeof RunningStackFile>;

function runningStackPath(dataDir: string): string {
  return join(dataDir, 'stack.json');
}

export function writeRunningStackFile(dataDir: string, running: RunningStackFile): void {
  writeFileSync(runningStackPath(dataDir), `${JSON.stringify(RunningStackFile.parse(running))}\n`, { mode: 0o600 });
}

export function removeRunningStackFile(dataDir: string): void {
  rmSync(runningStackPath(dataDir), { force: true });
}

/** The running stack of this data directory, if one wrote its file (it may have died since: check the pid). */
export function readRunningStackFile(dataDir: string): RunningStackFile | undefined {
  const path = runningStackPath(dataDir);
  if (!existsSync(path)) return undefined;
  return RunningStackFile.parse(JSON.parse(readFileSync(path, 'utf8')));
}

/** The servers of `npm start` for this data directory, without credentials: the running stack's, else the default ports. */
export function localServerUrls(dataDir: string): { mongoUrl: string; redisUrl: string } {
  const running = readRunningStackFile(dataDir);
  return {
    mongoUrl: running?.mongodb ?? `mongodb://127.0.0.1:${DEV_STACK_PORTS.mongodb}/?replicaSet=${EMBEDDED_REPLICA_SET}`,
    redisUrl: running?.redis ?? `redis://127.0.0.1:${DEV_STACK_PORTS.redis}`,
  };
}

/**
 * The administrator's URLs of the local stack's servers, for the admin command:
 * MONGO_URL / REDIS_URL when given, else the running stack's servers (or the default
 * ports) with the administrator's credential from the data directory.
 */
export function localAdminUrls(env: NodeJS.ProcessEnv = process.env): { mongoUrl: string; redisUrl: string; dataDir: string } {
  const dataDir = devStackDataDir(env);
  const { mongoUrl: mongoBase, redisUrl: redisBase } = localServerUrls(dataDir);
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
