import mongoose, { type Connection, type Model, type Schema } from 'mongoose';
import type { Logger } from '@envengine/process-kit';
import { retrying, type Backoff } from '@envengine/retry-policy';

/**
 * The start of the MongoDB `appName` of every engine service on that database
 * (`envengine/<database>/<service>`): how a deployment tells its own sessions from other
 * clients', other deployments on the same server included.
 */
export function engineAppNamePrefix(dbName: string): string {
  return `envengine/${dbName}/`;
}

export interface MongoOptions {
  url: string;
  dbName: string;
  /** The deployable's name, sent in the connection's `appName` (`engineAppNamePrefix`): MongoDB's logs and `$currentOp` show it. */
  service: string;
  /** How long an operation waits for a server before failing as unavailable. Default 2000 ms. */
  serverSelectionTimeoutMS?: number;
}

/**
 * Opens the service's own database, with majority writes. Commands are not buffered while disconnected: they
 * fail fast (503 at the edge) and succeed again once the driver has reconnected. The
 * first connection is retried until it succeeds, since the driver only reconnects after
 * one has been made.
 */
export async function connectMongo(options: MongoOptions, log: Logger): Promise<Connection> {
  return retrying(async () => {
    const connection = mongoose.createConnection(options.url, {
      dbName: options.dbName,
      appName: `${engineAppNamePrefix(options.dbName)}${options.service}`,
      bufferCommands: false,
      autoIndex: false,
      autoCreate: false,
      serverSelectionTimeoutMS: options.serverSelectionTimeoutMS ?? 2000,
      maxPoolSize: 32,
      // Every write the API acknowledges is on a majority of the replica set's members, so
      // that the death of a primary loses none of them (a write known only to the old
      // primary is rolled back when it rejoins). Whatever the server's own default.
      writeConcern: { w: 'majority' },
    });
    try {
      await connection.asPromise();
    } catch (error) {
      await connection.close().catch(() => undefined);
      throw error;
    }
    connection.on('disconnected', () => log.warn('mongodb disconnected'));
    connection.on('reconnected', () => log.info('mongodb reconnected'));
    return connection;
  }, {
    backoff: FIRST_CONNECTION_BACKOFF,
    onRetry: ({ tries, delayMs, error }) => log.warn({ attempt: tries, retry_in_ms: delayMs, err: (error as Error).message }, 'mongodb not reachable yet'),
  });
}

/** A service started before its database waits 250 ms, 500 ms, … then 5 s between tries. */
const FIRST_CONNECTION_BACKOFF: Backoff = { firstMs: 250, factor: 2, maxMs: 5_000 };

export async function pingMongo(connection: Connection): Promise<boolean> {
  const db = connection.db;
  if (!db) return false;
  await db.command({ ping: 1 });
  return true;
}

/** Creates the model's collection (if missing) and its declared indexes. */
export async function ensureCollectionAndIndexes<T>(model: Model<T>): Promise<void> {
  await model.createCollection().catch((error: { code?: unknown }) => {
    if (error.code !== NAMESPACE_EXISTS) throw error;
  });
  await model.createIndexes();
}

const NAMESPACE_EXISTS = 48;

/** E11000; with `field`, only one on a unique index over that field (not, say, a racing fence document's). */
export function isDuplicateKeyError(error: unknown, field?: string): boolean {
  if (typeof error !== 'object' || error === null || (error as { code?: unknown }).code !== 11000) return false;
  if (field === undefined) return true;
  const keyPattern = (error as { keyPattern?: unknown }).keyPattern;
  return typeof keyPattern === 'object' && keyPattern !== null && field in keyPattern;
}

/**
 * How many of an unordered insert's failures were documents already stored (E11000), when
 * every failure was one; undefined if any was something else (then the caller throws it).
 */
export function duplicatesOfInsert(error: unknown): number | undefined {
  const writeErrors = (error as { writeErrors?: unknown }).writeErrors;
  const list = Array.isArray(writeErrors) ? writeErrors : (error as { code?: unknown }).code === 11000 ? [error] : [];
  if (list.length === 0) return undefined;
  const codes = list.map((entry: { code?: unknown; err?: { code?: unknown } }) => entry.code ?? entry.err?.code);
  return codes.every((code) => code === 11000) ? list.length : undefined;
}

/** The connection's model of that name, compiled from `schema` the first time it is asked for. */
export function modelFor<T>(connection: Connection, name: string, schema: Schema<T>): Model<T> {
  return (connection.models[name] as Model<T> | undefined) ?? connection.model<T>(name, schema);
}
