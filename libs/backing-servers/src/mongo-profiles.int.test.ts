import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from './network.ts';
import { startMongo, type MongoAuth } from './mongo-server.ts';

const auth: MongoAuth = {
  replicaSetKey: randomBytes(24).toString('base64'),
  admin: { username: 'admin', password: randomBytes(12).toString('hex') },
  users: [],
};
const dataDir = mkdtempSync(join(tmpdir(), 'envengine-mongo-profiles-'));
const reported: string[] = [];

afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

/** The documents of the test's collection, read with majority (what the set acknowledged). */
async function namesIn(adminUrl: string): Promise<string[]> {
  const client = await new MongoClient(adminUrl, { serverSelectionTimeoutMS: 10_000 }).connect();
  try {
    const docs = await client.db('profiles').collection<{ name: string }>('things').find({}, { readConcern: { level: 'majority' }, sort: { name: 1 } }).toArray();
    return docs.map((doc) => doc.name);
  } finally {
    await client.close();
  }
}

async function add(adminUrl: string, names: string[]): Promise<void> {
  const client = await new MongoClient(adminUrl, { serverSelectionTimeoutMS: 10_000 }).connect();
  try {
    await client.db('profiles').collection('things').insertMany(names.map((name) => ({ name })), { writeConcern: { w: 'majority' } });
  } finally {
    await client.close();
  }
}

/**
 * One data directory, used by the cluster profile (three members), then the embedded one
 * (one), then the cluster one again, as `npm start -- --profile …` does on the same port:
 * each start comes up with every write acknowledged before.
 */
describe('MongoDB on one data directory across the profiles', { timeout: 300_000 }, () => {
  it('starts three members, then the first alone, then three again, keeping every acknowledged write', async () => {
    const port = await freePort();
    const start = (members: number) => startMongo({ dataDir, port, members, auth, report: (line) => reported.push(line) });

    const cluster = await start(3);
    await add(cluster.adminUrl, ['a', 'b']);
    await cluster.stop();

    const embedded = await start(1);
    try {
      expect(embedded.members).toHaveLength(1);
      expect(await namesIn(embedded.adminUrl)).toEqual(['a', 'b']);
      expect(reported.some((line) => /cluster profile's 3-member replica set; its first member goes on alone/.test(line))).toBe(true);
      await add(embedded.adminUrl, ['c']);
    } finally {
      await embedded.stop();
    }

    const again = await start(3);
    try {
      // The two members the embedded profile had removed caught up with the set.
      expect(await namesIn(again.adminUrl)).toEqual(['a', 'b', 'c']);
      for (const member of again.members!) {
        const direct = await new MongoClient(`${again.adminUrl.replace(/@[^/]*\//, `@${member.host}/`).replace(/replicaSet=rs0/, 'directConnection=true')}&readPreference=secondaryPreferred`).connect();
        try {
          // A secondary back after the others wrote catches up by replication: its count is read
          // until it has them all (it never loses one), not at once, which a busy machine may beat.
          const things = direct.db('profiles').collection('things');
          let count = await things.countDocuments();
          for (const deadline = Date.now() + 30_000; count < 3 && Date.now() < deadline; count = await things.countDocuments()) {
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          expect(count, member.host).toBe(3);
        } finally {
          await direct.close();
        }
      }
    } finally {
      await again.stop();
    }
  });

  it('refuses, in one line that says why, the embedded profile on a three-member directory whose other members’ data is gone', async () => {
    const own = mkdtempSync(join(tmpdir(), 'envengine-mongo-lost-'));
    try {
      const port = await freePort();
      const cluster = await startMongo({ dataDir: own, port, members: 3, auth, report: () => undefined });
      await cluster.stop();
      rmSync(join(own, 'mongod-2'), { recursive: true, force: true });
      rmSync(join(own, 'mongod-3'), { recursive: true, force: true });
      await expect(startMongo({ dataDir: own, port, members: 1, auth, report: () => undefined })).rejects.toThrow(
        /3-member replica set \(the cluster profile's\) whose members 127\.0\.0\.1:\d+, 127\.0\.0\.1:\d+ have no data here .*start with --profile cluster/,
      );
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });
});
