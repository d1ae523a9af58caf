import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Binary, MongoClient, type Document } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Run } from '@envengine/contracts';
import { mongoUrlFor, withoutCredential } from '@envengine/backing-servers';
import { loadOrCreateCredentials, MONGO_SCOPE_USERS } from '@envengine/dev-stack';
import { engineAppNamePrefix } from '@envengine/service-kit';
import { createTenant, type TestTenant } from '@envengine/test-harness';
import { deployRunsProject, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');
const placementDb = stack.databases['placement-service'];
const credentials = loadOrCreateCredentials(stack.dataDir);
const placementUser = MONGO_SCOPE_USERS['placement-service'];
const placementUrl = mongoUrlFor(withoutCredential(stack.mongoUrl), { username: placementUser.username, password: credentials.mongodb[placementUser.password] });

/**
 * A process that writes one document in a transaction and is SIGKILLed inside it, as a
 * placement-service killed inside the runner's admission is: MongoDB keeps the transaction
 * open. It prints its session's id (hex) first.
 */
const DIE_INSIDE_TRANSACTION_SCRIPT = `
import { MongoClient } from 'mongodb';
const client = new MongoClient(process.env.HOLDER_URL, { appName: process.env.HOLDER_APP_NAME });
await client.connect();
const session = client.startSession();
session.startTransaction();
await client.db(process.env.HOLDER_DB).collection(process.env.HOLDER_COLLECTION).updateOne({ _id: process.env.HOLDER_DOCUMENT }, { $inc: { writes: 1 } }, { session, upsert: true });
process.stdout.write(session.id.id.toString('hex'));
process.kill(process.pid, 'SIGKILL');
`;

/** Runs that script as the placement-service's MongoDB user; resolves with the session's id (hex) once it was SIGKILLed holding the document. */
function dieInsideTransaction(appName: string, collection: string, document: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', DIE_INSIDE_TRANSACTION_SCRIPT], {
      env: { PATH: process.env.PATH, HOLDER_URL: placementUrl, HOLDER_DB: placementDb, HOLDER_APP_NAME: appName, HOLDER_COLLECTION: collection, HOLDER_DOCUMENT: document },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('exit', (_code, signal) => (signal === 'SIGKILL' && /^[0-9a-f]{32}$/.test(output) ? resolve(output) : reject(new Error(`the holder did not die holding ${document}: ${signal}\n${output}`))));
  });
}

/** The open transaction on the session of that id (hex), as `$currentOp` shows it; undefined if there is none. */
async function openTransaction(admin: MongoClient, sessionId: string): Promise<{ lsid: Document } | undefined> {
  const [open] = await admin
    .db('admin')
    .aggregate<{ lsid: Document }>([{ $currentOp: { idleSessions: true, allUsers: true } }, { $match: { 'lsid.id': new Binary(Buffer.from(sessionId, 'hex'), Binary.SUBTYPE_UUID), transaction: { $exists: true } } }])
    .toArray();
  return open;
}

/** Writes the admission fence in a transaction of the administrator's: the error's code name, or 'ok' once committed. */
async function fenceWrite(admin: MongoClient): Promise<string> {
  const session = admin.startSession();
  try {
    session.startTransaction();
    await admin.db(placementDb).collection<{ _id: string; writes: number }>('engine_fences').updateOne({ _id: 'runner-admission' }, { $inc: { writes: 1 } }, { session });
    await session.commitTransaction();
    return 'ok';
  } catch (error) {
    await session.abortTransaction().catch(() => undefined);
    return (error as { codeName?: string }).codeName ?? (error as Error).message;
  } finally {
    await session.endSession();
  }
}

describe('a placement-service killed inside a transaction', () => {
  const admin = new MongoClient(stack.mongoUrl, { serverSelectionTimeoutMS: 5000 });
  const held: string[] = [];
  let tenant: TestTenant;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'abandoned');
    await deployRunsProject(tenant, join(stack.dataDir, 'lake', tenant.tenantId), 'local');
  });

  afterAll(async () => {
    // Whatever the test saw, no transaction of its holders outlives it (the stack's other files would wait on the fence).
    for (const sessionId of held) {
      const open = await openTransaction(admin, sessionId);
      if (open) await admin.db('admin').command({ killAllSessionsByPattern: [{ lsid: open.lsid }] });
    }
    await admin.close();
  });

  it("does not hold the runner's admission for MongoDB's transaction lifetime (60 s): a new local run still starts and succeeds", async () => {
    const fenceHolder = await dieInsideTransaction(`${engineAppNamePrefix(placementDb)}placement-service`, 'engine_fences', 'runner-admission');
    // Control: another deployment's transaction on the same server, as the same user, is not the engine's to end.
    const otherDeployment = await dieInsideTransaction(`${engineAppNamePrefix('another-deployment')}placement-service`, 'abandoned_probe', 'another deployment');
    held.push(fenceHolder, otherDeployment);
    // Positive controls: the dead process's transaction is open, and holds the fence as a killed admission's would.
    expect(await openTransaction(admin, fenceHolder)).toBeDefined();
    expect(await fenceWrite(admin)).toBe('WriteConflict');

    const created = await tenant.api.post('/environments/prod/runs', { assets: ['orders'] });
    expect(created.status, created.text).toBe(201);
    // Within waitForRun's 30 s: half of MongoDB's own limit, which alone would leave the run queued.
    const finished = await waitForRun(tenant, Run.parse(created.body.data).id);
    expect(finished.status).toBe('succeeded');
    // The abandoned transaction was aborted, not merely outlived; the other deployment's is still open.
    expect(await openTransaction(admin, fenceHolder)).toBeUndefined();
    expect(await openTransaction(admin, otherDeployment)).toBeDefined();
  });
});
