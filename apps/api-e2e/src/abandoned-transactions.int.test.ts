import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Binary, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Run } from '@envengine/contracts';
import { mongoUrlFor, withoutCredential } from '@envengine/backing-servers';
import { loadOrCreateCredentials, MONGO_SCOPE_USERS } from '@envengine/dev-stack';
import { ENGINE_APP_NAME_PREFIX } from '@envengine/service-kit';
import { createTenant, type TestTenant } from '@envengine/test-harness';
import { deployRunsProject, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');
const placementDb = stack.databases['placement-service'];
const credentials = loadOrCreateCredentials(stack.dataDir);
const placementUser = MONGO_SCOPE_USERS['placement-service'];
const placementUrl = mongoUrlFor(withoutCredential(stack.mongoUrl), { username: placementUser.username, password: credentials.mongodb[placementUser.password] });

/** What a placement-service killed inside an admission leaves behind: the runner's admission fence written in a transaction MongoDB keeps open. */
const HOLDER = `
import { Binary, MongoClient } from 'mongodb';
const client = new MongoClient(process.env.HOLDER_URL, { appName: process.env.HOLDER_APP_NAME });
await client.connect();
const session = client.startSession();
session.startTransaction();
await client.db(process.env.HOLDER_DB).collection('engine_fences').updateOne({ _id: 'runner-admission' }, { $inc: { writes: 1 } }, { session });
process.stdout.write(session.id.id.toString('hex'));
process.kill(process.pid, 'SIGKILL');
`;

/** Runs the holder to its death; resolves, with its session's id (hex), once it was SIGKILLed after writing the fence. */
function dieInsideAdmission(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', HOLDER], {
      env: { PATH: process.env.PATH, HOLDER_URL: placementUrl, HOLDER_DB: placementDb, HOLDER_APP_NAME: `${ENGINE_APP_NAME_PREFIX}placement-service` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('exit', (_code, signal) => (signal === 'SIGKILL' && /^[0-9a-f]{32}$/.test(output) ? resolve(output) : reject(new Error(`the holder did not die holding the fence: ${signal}\n${output}`))));
  });
}

/** Whether MongoDB still has a transaction open on the session of that id (hex). */
async function transactionOpen(admin: MongoClient, sessionId: string): Promise<boolean> {
  const open = await admin
    .db('admin')
    .aggregate([{ $currentOp: { idleSessions: true, allUsers: true } }, { $match: { 'lsid.id': new Binary(Buffer.from(sessionId, 'hex'), Binary.SUBTYPE_UUID), transaction: { $exists: true } } }])
    .toArray();
  return open.length > 0;
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
  let tenant: TestTenant;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'abandoned');
    await deployRunsProject(tenant, join(stack.dataDir, 'lake', tenant.tenantId), 'local');
  });

  afterAll(() => admin.close());

  it("does not hold the runner's admission for MongoDB's transaction lifetime (60 s): a new local run still starts and succeeds", async () => {
    const sessionId = await dieInsideAdmission();
    // Positive controls: the dead process's transaction is open, and holds the fence as a killed admission's would.
    expect(await transactionOpen(admin, sessionId)).toBe(true);
    expect(await fenceWrite(admin)).toBe('WriteConflict');

    const created = await tenant.api.post('/environments/prod/runs', { assets: ['orders'] });
    expect(created.status, created.text).toBe(201);
    // Within waitForRun's 30 s: half of MongoDB's own limit, which alone would leave the run queued.
    const finished = await waitForRun(tenant, Run.parse(created.body.data).id);
    expect(finished.status).toBe('succeeded');
    // The abandoned transaction was aborted, not merely outlived.
    expect(await transactionOpen(admin, sessionId)).toBe(false);
  });
});
