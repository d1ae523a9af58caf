import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeclaredSchema, Row } from './declared-schema.ts';
import { readMaterialization, StoredFileMismatchError } from './materialization.ts';
import { MaterializationTooLargeError, MaterializationUpload } from './materialization-upload.ts';
import { ParquetFileError } from './parquet-codec.ts';
import { ParquetRowWriter } from './parquet-row-writer.ts';
import { RowSchemaError } from './row-check.ts';
import { FileStorageDriver } from './file-storage-driver.ts';
import type { StorageDriver } from './storage-driver.ts';

let root: string;
let spool: string;
let prefix: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'materialization-upload-'));
  spool = join(root, 'spool');
  prefix = `${pathToFileURL(join(root, 'lake')).href}/`;
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const SCHEMA: DeclaredSchema = { columns: [{ name: 'id', type: 'integer' }, { name: 'at', type: 'timestamp' }, { name: 'note', type: 'string', nullable: true }] };
const rowsFrom = (start: number, count: number): Row[] => Array.from({ length: count }, (_, index) => ({ id: start + index, at: new Date(Date.UTC(2026, 0, 1) + (start + index) * 1000), note: index % 3 === 0 ? null : `n${start + index}` }));

function upload(driver: StorageDriver = new FileStorageDriver(prefix), schema: DeclaredSchema | null = SCHEMA, maxBytes?: number) {
  return new MaterializationUpload({ storagePrefix: prefix, assetKey: 'events', materializationId: 'mat_01', schema, driver, spoolDirectory: spool, ...(maxBytes === undefined ? {} : { maxBytes }) });
}

/** Rows encoded as the child does, each chunk of bytes appended to `target` as it comes. */
async function encodeInto(target: MaterializationUpload, schema: DeclaredSchema | null, batches: Row[][], rowsPerGroup?: number): Promise<number> {
  let chunks = 0;
  const writer = new ParquetRowWriter({ schema, rowsPerGroup, onBytes: async (bytes) => { chunks += 1; await target.write(bytes); } });
  for (const batch of batches) await writer.write(batch);
  await writer.finish();
  return chunks;
}

describe('ParquetRowWriter into a MaterializationUpload', () => {
  it('hands on each row group as it is written; the file is stored and described from what the store holds', async () => {
    const writing = upload();
    const chunks = await encodeInto(writing, SCHEMA, [rowsFrom(0, 10_000), rowsFrom(10_000, 15_000)], 4_000);
    // 10,000 rows make 3 groups and 15,000 make 4; the footer comes last.
    expect(chunks).toBe(8);
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

  it('names a bad row by its index over the whole file, and an aborted upload leaves nothing behind', async () => {
    const writing = upload();
    const writer = new ParquetRowWriter({ schema: SCHEMA, onBytes: (bytes) => writing.write(bytes) });
    await writer.write(rowsFrom(0, 100));
    await expect(writer.write([...rowsFrom(100, 5), { id: 'x', at: new Date(0) }])).rejects.toThrow(RowSchemaError);
    await expect(writer.write([{ id: 'x', at: new Date(0) }])).rejects.toThrow(/row 100/);
    await writing.abort();
    expect(await readdir(spool)).toEqual([]);
  });

  it('takes the columns of the first rows when none are declared', async () => {
    const writing = upload(new FileStorageDriver(prefix), null);
    await encodeInto(writing, null, [[{ id: 1, name: 'a' }], [{ id: 2, name: null }]]);
    expect(await writing.finish()).toMatchObject({
      row_count: 2,
      columns: [{ name: 'id', type: 'integer', nullable: true }, { name: 'name', type: 'string', nullable: true }],
    });
  });

  it('refuses a file whose columns are not the declared ones, and bytes that are not Parquet: a child may send anything', async () => {
    const other = upload();
    await encodeInto(other, { columns: [{ name: 'id', type: 'string' }] }, [[{ id: 'one' }]]);
    await expect(other.finish()).rejects.toThrow(/stores the columns id string, not the declared id integer, at timestamp, note string null/);
    expect(await readdir(join(root, 'lake', 'events')).catch(() => [])).toEqual([]);
    const garbage = upload();
    await garbage.write(new TextEncoder().encode('PAR1 this is not a footer PAR1'));
    await expect(garbage.finish()).rejects.toThrow(ParquetFileError);
    await expect(upload().finish()).rejects.toThrow(/No bytes/);
    expect(await readdir(spool)).toEqual([]);
  });

  it('stops an upload past its size limit', async () => {
    const writing = upload(new FileStorageDriver(prefix), SCHEMA, 64 * 1024);
    await expect(encodeInto(writing, SCHEMA, [rowsFrom(0, 50_000)], 5_000)).rejects.toThrow(MaterializationTooLargeError);
    await writing.abort();
    expect(await readdir(spool)).toEqual([]);
  });

  it('refuses a store that hands back other bytes than it was given', async () => {
    const inner = new FileStorageDriver(prefix);
    const lying: StorageDriver = {
      write: (location, bytes) => inner.write(location, bytes),
      writeStream: (location, open) => inner.writeStream(location, open),
      read: (location) => inner.read(location),
      listWritten: (after, limit) => inner.listWritten(after, limit),
      readStream: async (location) => {
        const { Readable } = await import('node:stream');
        const bytes = Buffer.from(await readFile(new URL(location)));
        bytes[10] = bytes[10]! ^ 0xff;
        return Readable.from([bytes]);
      },
      remove: (location) => inner.remove(location),
      size: (location) => inner.size(location),
    };
    const writing = upload(lying);
    await encodeInto(writing, SCHEMA, [rowsFrom(0, 10)]);
    await expect(writing.finish()).rejects.toThrow(StoredFileMismatchError);
  });
});
