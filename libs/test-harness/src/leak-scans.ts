import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectRedis, everyRedisKey } from '@envengine/redis-connections';
import { BSON, MongoClient } from 'mongodb';
import { Client, Connection } from '@temporalio/client';

export interface LeakHit {
  where: string;
  needle: string;
}

function hitsIn(where: string, text: string, needles: readonly string[]): LeakHit[] {
  return needles.filter((needle) => text.includes(needle)).map((needle) => ({ where, needle }));
}

/** Every document of every collection of every database on the server, searched as extended JSON. */
export async function scanDatabases(
  mongoUrl: string,
  needles: readonly string[],
): Promise<{ hits: LeakHit[]; documents: number; unreadable: string[] }> {
  const client = new MongoClient(mongoUrl, { serverSelectionTimeoutMS: 5000 });
  const hits: LeakHit[] = [];
  const unreadable: string[] = [];
  let documents = 0;
  try {
    await client.connect();
    const { databases } = await client.db('admin').admin().listDatabases();
    for (const { name: dbName } of databases) {
      const db = client.db(dbName);
      for (const { name: collectionName } of await db.listCollections({}, { nameOnly: true }).toArray()) {
        try {
          for await (const doc of db.collection(collectionName).find({})) {
            documents += 1;
            // Binary fields appear as base64 in extended JSON; search them decoded too.
            const text = BSON.EJSON.stringify(doc, { relaxed: false });
            hits.push(...hitsIn(`mongodb ${dbName}.${collectionName} ${String(doc._id)}`, text, needles));
            hits.push(...hitsIn(`mongodb ${dbName}.${collectionName} ${String(doc._id)} (binary)`, decodedBinaries(doc), needles));
          }
        } catch (error) {
          // Even the administrator may not read some of mongod's own bookkeeping (e.g.
          // admin.system.keys): said, so that the caller checks that nothing else was left out.
          if ((error as { code?: number }).code !== UNAUTHORIZED) throw error;
          unreadable.push(`${dbName}.${collectionName}`);
        }
      }
    }
  } finally {
    await client.close();
  }
  return { hits, documents, unreadable };
}

const UNAUTHORIZED = 13;

function decodedBinaries(value: unknown): string {
  if (value === null || typeof value !== 'object') return '';
  const binary = value as { _bsontype?: string; buffer?: Uint8Array };
  if (binary._bsontype === 'Binary' && binary.buffer) return Buffer.from(binary.buffer).toString('latin1');
  return Object.values(value).map(decodedBinaries).join('\n');
}

/** Every key of the Redis server (of each master of a Redis Cluster), searched in its serialized value. */
export async function scanRedis(redisUrl: string, needles: readonly string[]): Promise<{ hits: LeakHit[]; keys: number }> {
  const connection = connectRedis(redisUrl, { maxRetriesPerRequest: 1 });
  const hits: LeakHit[] = [];
  let keys = 0;
  try {
    for await (const { server, key } of everyRedisKey(connection)) {
      keys += 1;
      const dumped = await server.dumpBuffer(key);
      hits.push(...hitsIn(`redis ${key}`, `${key}\n${dumped?.toString('latin1') ?? ''}`, needles));
    }
  } finally {
    connection.disconnect();
  }
  return { hits, keys };
}

/** Every service log file of a stack. */
export function scanLogs(dataDir: string, needles: readonly string[]): { hits: LeakHit[]; files: number } {
  const logDir = join(dataDir, 'logs');
  const files = readdirSync(logDir).filter((file) => file.endsWith('.log'));
  const hits = files.flatMap((file) => hitsIn(`log ${file}`, readFileSync(join(logDir, file), 'latin1'), needles));
  return { hits, files: files.length };
}

/**
 * Every event of every workflow history on the Temporal server. Payloads arrive as bytes
 * (JSON of a Uint8Array would show only numbers), so each byte field is searched decoded.
 */
export async function scanWorkflowHistories(temporalAddress: string, needles: readonly string[]): Promise<{ hits: LeakHit[]; histories: number }> {
  const connection = await Connection.connect({ address: temporalAddress });
  const hits: LeakHit[] = [];
  let histories = 0;
  try {
    const client = new Client({ connection });
    for await (const execution of client.workflow.list()) {
      histories += 1;
      const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
      const where = `temporal ${execution.workflowId}/${execution.runId}`;
      hits.push(...hitsIn(where, `${JSON.stringify(history)}\n${decodedBytes(history)}`, needles));
    }
  } finally {
    await connection.close();
  }
  return { hits, histories };
}

function decodedBytes(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('latin1');
  if (value === null || typeof value !== 'object') return '';
  return Object.values(value).map(decodedBytes).join('\n');
}
