import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeclaredSchema, Row } from './declared-schema.ts';
import { readMaterialization, StoredFileMismatchError } from './materialization.ts';
import { MaterializationStream } from './materialization-stream.ts';
import { RowSchemaError } from './row-check.ts';
import { FileStorageDriver, type StorageDriver } from './storage-driver.ts';

let root: string;
let spool: string;
let prefix: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'materialization-stream-'));
  spool = join(root, 'spool');
  prefix = `${pathToFileURL(join(root, 'lake')).href}/`;
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const SCHEMA: DeclaredSchema = { columns: [{ name: 'id', type: 'integer' }, { name: 'at', type: 'timestamp' }, { name: 'note', type: 'string', nullable: true }] };
const rowsFrom = (start: number, count: number): Row[] => Array.from({ length: count }, (_, index) => ({ id: start + index, at: new Date(Date.UTC(2026, 0, 1) + (start + index) * 1000), note: index % 3 === 0 ? null : `n${start + index}` }));

function stream(driver: StorageDriver = new FileStorageDriver(prefix), schema: DeclaredSchema | null = SCHEMA) {
  return new MaterializationStream({ storagePrefix: prefix, assetKey: 'events', materializationId: 'mat_01', schema, driver, spoolDirectory: spool });
}

describe('MaterializationStream', () => {
  it('writes batches as row groups of one file, stores it, and describes what the store holds', async () => {
    const writing = stream();
    for (let start = 0; start < 25_000; start += 10_000) await writing.write(rowsFrom(start, Math.min(10_000, 25_000 - start)));
    const written = await writing.finish();
    expect(written).toMatchObject({ location: `${prefix}events/mat_01.parquet`, row_count: 25_000 });
    expect(written.columns).toEqual([
      { name: 'id', type: 'integer', nullable: false },
      { name: 'at', type: 'timestamp', nullable: false },
      { name: 'note', type: 'string', nullable: true },
    ]);
    const back = await readMaterialization(written.location, { sha256: written.sha256 });
    expect(back).toHaveLength(25_000);
    expect(back[24_999]).toMatchObject({ id: 24_999, note: 'n24999' });
    expect(new Date(back[24_999]!['at'] as string).getTime()).toBe(Date.UTC(2026, 0, 1) + 24_999_000);
    // Nothing left in the spool.
    expect(await readdir(spool)).toEqual([]);
  });

  it('names a bad row by its index over the whole materialization, and leaves nothing behind after abort', async () => {
    const writing = stream();
    await writing.write(rowsFrom(0, 100));
    await expect(writing.write([...rowsFrom(100, 5), { id: 'x', at: new Date(0) }])).rejects.toThrow(RowSchemaError);
    await expect(writing.write([{ id: 'x', at: new Date(0) }])).rejects.toThrow(/row 100/);
    await writing.abort();
    expect(await readdir(spool)).toEqual([]);
  });

  it('takes the schema of the first rows when none is declared', async () => {
    const writing = new MaterializationStream({
      storagePrefix: prefix, assetKey: 'events', materializationId: 'mat_02', schema: null, driver: new FileStorageDriver(prefix), spoolDirectory: spool,
      inferSchema: () => ({ columns: [{ name: 'id', type: 'integer', nullable: true }] }),
    });
    await writing.write([{ id: 1 }]);
    await writing.write([{ id: 2 }]);
    expect(await writing.finish()).toMatchObject({ row_count: 2, columns: [{ name: 'id', type: 'integer', nullable: true }] });
  });

  it('refuses a store that hands back other bytes than it was given', async () => {
    const inner = new FileStorageDriver(prefix);
    const lying: StorageDriver = {
      write: (location, bytes) => inner.write(location, bytes),
      writeStream: (location, open) => inner.writeStream(location, open),
      read: (location) => inner.read(location),
      readStream: async (location) => {
        const { Readable } = await import('node:stream');
        const bytes = Buffer.from(await readFile(new URL(location)));
        bytes[10] = bytes[10]! ^ 0xff;
        return Readable.from([bytes]);
      },
      remove: (location) => inner.remove(location),
    };
    const writing = stream(lying);
    await writing.write(rowsFrom(0, 10));
    await expect(writing.finish()).rejects.toThrow(StoredFileMismatchError);
  });
});
