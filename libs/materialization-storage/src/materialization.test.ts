import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeclaredSchema } from './declared-schema.ts';
import { readMaterialization, StoredFileMismatchError } from './materialization.ts';
import { encodeParquet, ParquetFileError } from './parquet-codec.ts';
import { FileStorageDriver } from './file-storage-driver.ts';
import { StoredFileNotFoundError, type StorageDriver } from './storage-driver.ts';

let root: string;
let prefix: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'materialization-'));
  prefix = `${pathToFileURL(root).href}/`;
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const SCHEMA: DeclaredSchema = {
  columns: [
    { name: 'order_id', type: 'integer' },
    { name: 'customer', type: 'string' },
    { name: 'amount', type: 'number', nullable: true },
    { name: 'placed_at', type: 'timestamp' },
  ],
};

const ROWS = [
  { order_id: 1, customer: 'ada', amount: 12.5, placed_at: '2024-05-01T10:00:00Z' },
  { order_id: 2, customer: 'grace', amount: null, placed_at: new Date('2024-05-02T11:00:00.250Z') },
];

/** The rows stored as Parquet at `<prefix>orders/mat_01.parquet`: its location and SHA-256. */
async function storeOrders(): Promise<{ location: string; sha256: string }> {
  const bytes = encodeParquet(SCHEMA, ROWS);
  const { location } = await new FileStorageDriver(prefix).write(`${prefix}orders/mat_01.parquet`, bytes);
  return { location, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** A driver that records what it is asked and can hand back other bytes than it stored. */
function recordingDriver(inner: StorageDriver, readBack?: (stored: Uint8Array) => Uint8Array) {
  const calls: string[] = [];
  const driver: StorageDriver = {
    async write(location, bytes) {
      calls.push(`write ${location}`);
      return inner.write(location, bytes);
    },
    async read(location) {
      calls.push(`read ${location}`);
      const stored = await inner.read(location);
      return readBack === undefined ? stored : readBack(stored);
    },
    listWritten: (after, limit) => inner.listWritten(after, limit),
    async remove(location) {
      calls.push(`remove ${location}`);
      return inner.remove(location);
    },
    writeStream: (location, open) => inner.writeStream(location, open),
    readStream: (location) => inner.readStream(location),
    size: (location) => inner.size(location),
  };
  return { driver, calls };
}

describe('readMaterialization', () => {
  it('fails clearly when nothing is stored at the location', async () => {
    await expect(readMaterialization(`${prefix}orders/missing.parquet`)).rejects.toThrow(StoredFileNotFoundError);
  });

  it('fails clearly when the stored file is not Parquet', async () => {
    await writeFile(join(root, 'not-parquet.parquet'), 'order_id,customer\n1,ada\n');
    await expect(readMaterialization(`${prefix}not-parquet.parquet`)).rejects.toThrow(ParquetFileError);
  });

  it('detects a changed byte that Parquet itself would decode silently, given the SHA-256', async () => {
    const written = await storeOrders();
    const path = join(root, 'orders', 'mat_01.parquet');
    const file = await readFile(path);
    // Flip a bit in the last value of the `amount` column's plain-encoded data.
    const needle = Buffer.alloc(8);
    needle.writeDoubleLE(12.5);
    const at = file.indexOf(needle);
    expect(at).toBeGreaterThan(0);
    file[at + 7] = file[at + 7]! ^ 0x01;
    await writeFile(path, file);
    const silently = await readMaterialization(written.location);
    expect(silently[0]!.amount).not.toBe(12.5);
    await expect(readMaterialization(written.location, { sha256: written.sha256 })).rejects.toThrow(StoredFileMismatchError);
  });

  it('reads through a given driver', async () => {
    const written = await storeOrders();
    const { driver, calls } = recordingDriver(new FileStorageDriver(prefix));
    await readMaterialization(written.location, { driver, sha256: written.sha256 });
    expect(calls).toEqual([`read ${written.location}`]);
  });
});
