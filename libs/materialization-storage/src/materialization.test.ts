import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeclaredSchema } from './declared-schema.ts';
import { readMaterialization, StoredFileMismatchError, writeMaterialization } from './materialization.ts';
import { encodeParquet, ParquetFileError, storedColumnsOf } from './parquet-codec.ts';
import { RowSchemaError } from './row-check.ts';
import { FileStorageDriver, StoredFileNotFoundError, UnsupportedStorageError, type StorageDriver } from './storage-driver.ts';

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

function input(overrides: Partial<Parameters<typeof writeMaterialization>[0]> = {}) {
  return { storagePrefix: prefix, assetKey: 'orders', materializationId: 'mat_01', schema: SCHEMA, rows: ROWS, ...overrides };
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
    async remove(location) {
      calls.push(`remove ${location}`);
      return inner.remove(location);
    },
    writeStream: (location, open) => inner.writeStream(location, open),
    readStream: (location) => inner.readStream(location),
  };
  return { driver, calls };
}

describe('writeMaterialization', () => {
  it('stores the rows as Parquet at <prefix>/<asset key>/<id>.parquet and describes the stored file', async () => {
    const written = await writeMaterialization(input());
    const path = join(root, 'orders', 'mat_01.parquet');
    const file = await readFile(path);
    expect(written).toEqual({
      location: `${pathToFileURL(root).href}/orders/mat_01.parquet`,
      bytes: (await stat(path)).size,
      row_count: 2,
      columns: [
        { name: 'order_id', type: 'integer', nullable: false },
        { name: 'customer', type: 'string', nullable: false },
        { name: 'amount', type: 'number', nullable: true },
        { name: 'placed_at', type: 'timestamp', nullable: false },
      ],
      sha256: createHash('sha256').update(file).digest('hex'),
    });
    expect(storedColumnsOf(file)).toEqual(written.columns);
    expect(await readMaterialization(written.location)).toEqual([
      { order_id: 1, customer: 'ada', amount: 12.5, placed_at: '2024-05-01T10:00:00.000Z' },
      { order_id: 2, customer: 'grace', amount: null, placed_at: '2024-05-02T11:00:00.250Z' },
    ]);
  });

  it('writes through the driver, then reads the file back through it', async () => {
    const { driver, calls } = recordingDriver(new FileStorageDriver(prefix));
    const written = await writeMaterialization(input({ driver }));
    expect(calls).toEqual([`write ${written.location}`, `read ${written.location}`]);
  });

  it('fails when the file read back is not the one written', async () => {
    const other = encodeParquet({ columns: [{ name: 'x', type: 'boolean' }] }, [{ x: true }, { x: false }]);
    const { driver } = recordingDriver(new FileStorageDriver(prefix), () => other);
    const failure = writeMaterialization(input({ driver }));
    await expect(failure).rejects.toThrow(StoredFileMismatchError);
    await expect(failure).rejects.toThrow(/does not hold the \d+ bytes just written/);
  });

  it('stores nothing when a row does not match the schema', async () => {
    const rows = [...ROWS, { order_id: 3, customer: 'linus', amount: '9.99', placed_at: '2024-05-03T09:00:00Z' }];
    await expect(writeMaterialization(input({ rows }))).rejects.toThrow(
      new RowSchemaError(2, 'amount', 'expected number (finite), got string "9.99"'),
    );
    expect(await readdir(root)).toEqual([]);
  });

  it('refuses an unsupported storage prefix before encoding anything', async () => {
    await expect(writeMaterialization(input({ storagePrefix: 'gs://bucket/prod', rows: [{ bad: 1 }] }))).rejects.toThrow(
      UnsupportedStorageError,
    );
  });

  it('stores an empty materialization', async () => {
    const written = await writeMaterialization(input({ rows: [] }));
    expect(written.row_count).toBe(0);
    expect(written.columns).toHaveLength(4);
    expect(await readMaterialization(written.location)).toEqual([]);
  });
});

describe('readMaterialization', () => {
  it('fails clearly when nothing is stored at the location', async () => {
    await expect(readMaterialization(`${prefix}orders/missing.parquet`)).rejects.toThrow(StoredFileNotFoundError);
  });

  it('fails clearly when the stored file is not Parquet', async () => {
    await writeFile(join(root, 'not-parquet.parquet'), 'order_id,customer\n1,ada\n');
    await expect(readMaterialization(`${prefix}not-parquet.parquet`)).rejects.toThrow(ParquetFileError);
  });

  it('detects a changed byte that Parquet itself would decode silently, given the SHA-256', async () => {
    const written = await writeMaterialization(input());
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
    const written = await writeMaterialization(input());
    const { driver, calls } = recordingDriver(new FileStorageDriver(prefix));
    await readMaterialization(written.location, { driver, sha256: written.sha256 });
    expect(calls).toEqual([`read ${written.location}`]);
  });
});
