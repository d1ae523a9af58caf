// One materialization written as its rows arrive, in batches (issue 34): each batch is
// checked and encoded as a row group of its own, then appended to a spool file on the
// worker's disk; at the end the file is stored through the driver as a stream and read
// back as one. Memory holds one batch and one row group, never the whole emit.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { DeclaredSchema, Row } from './declared-schema.ts';
import { StoredFileMismatchError, type WrittenMaterialization } from './materialization.ts';
import { describeParquet, parquetColumnData, parquetSchemaOf, PARQUET_WRITE_OPTIONS } from './parquet-codec.ts';
import { checkRows } from './row-check.ts';
import { materializationLocation, type StorageDriver } from './storage-driver.ts';

export interface MaterializationStreamInput {
  storagePrefix: string;
  assetKey: string;
  materializationId: string;
  /** The declared schema; null takes the columns of the first batch's first row (`inferSchema`). */
  schema: DeclaredSchema | null;
  driver: StorageDriver;
  /** A directory of the worker's own where the file is written before it is stored. */
  spoolDirectory: string;
  /** For an asset that declares no schema: the schema its first rows imply. */
  inferSchema?: (rows: readonly Row[]) => DeclaredSchema;
  /** The largest file it may write (the worker's disk is shared); past it `write` throws. Default: no limit. */
  maxBytes?: number;
}

/** An emit past the largest materialization the worker writes. */
export class MaterializationTooLargeError extends Error {
  override readonly name = 'MaterializationTooLargeError';
}

/** The footer of a file is read from the last bytes of its read-back: at most this much is kept. */
const MAX_FOOTER_BYTES = 16 * 1024 * 1024;

/** A ByteWriter whose bytes go to a file after each row group: it holds one row group at most. */
class SpoolWriter extends ByteWriter {
  private readonly hash = createHash('sha256');
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly handle: FileHandle) {
    super(1024 * 1024);
  }

  /** Appends what is buffered to the file; ParquetWriter awaits it before the next row group. */
  flush(): Promise<void> {
    const bytes = new Uint8Array(this.buffer.slice(0, this.index));
    this.index = 0;
    this.hash.update(bytes);
    this.writing = this.writing.then(async () => {
      await this.handle.write(bytes);
    });
    return this.writing;
  }

  override finish(): void {
    void this.flush();
  }

  /** Once every byte is written: the file's SHA-256. */
  async digest(): Promise<string> {
    await this.writing;
    return this.hash.digest('hex');
  }
}

/**
 * Rows of one materialization, checked and written batch by batch. `write` must not be
 * called again before the last call settled; a `RowSchemaError` names the row by its
 * index over the whole materialization.
 */
export class MaterializationStream {
  private rowCount = 0;
  private schema: DeclaredSchema | null;
  private parquet: ParquetWriter | undefined;
  private spool: SpoolWriter | undefined;
  private handle: FileHandle | undefined;
  private readonly spoolPath: string;

  constructor(private readonly input: MaterializationStreamInput) {
    this.schema = input.schema;
    this.spoolPath = join(input.spoolDirectory, `${input.materializationId}.${randomBytes(6).toString('hex')}.parquet.partial`);
  }

  /** Checks a batch against the schema and appends it as a row group. */
  async write(rows: readonly Row[]): Promise<void> {
    if (rows.length === 0) return;
    this.schema ??= this.input.inferSchema ? this.input.inferSchema(rows) : null;
    if (this.schema === null) throw new TypeError('A materialization needs a schema: declare one, or give inferSchema.');
    checkRows(this.schema, rows, this.rowCount);
    const writer = await this.writer(this.schema);
    await writer.write({ ...PARQUET_WRITE_OPTIONS, columnData: parquetColumnData(this.schema, rows), rowGroupSize: rows.length });
    this.rowCount += rows.length;
    const limit = this.input.maxBytes;
    if (limit !== undefined && this.spool!.offset > limit) {
      throw new MaterializationTooLargeError(`the materialization is over ${limit} bytes of Parquet after ${this.rowCount} rows (the limit of one emit)`);
    }
  }

  /** Ends the file, stores it, reads it back and describes what the store holds. */
  async finish(): Promise<WrittenMaterialization> {
    try {
      // An emit of no rows is still a materialization: a file of no row groups.
      const writer = await this.writer(this.schema ?? { columns: [] });
      // SpoolWriter.finish only starts the last write; digest() waits for it.
      void writer.finish();
      const sha256 = await this.spool!.digest();
      await this.handle!.close();
      this.handle = undefined;
      const { storagePrefix, assetKey, materializationId, driver } = this.input;
      const location = materializationLocation(storagePrefix, assetKey, materializationId);
      const written = await driver.writeStream(location, () => createReadStream(this.spoolPath));
      const readBack = await readBackOf(driver, written.location);
      if (readBack.sha256 !== sha256) {
        throw new StoredFileMismatchError(`${written.location} does not hold the ${written.bytes} bytes just written (it holds ${readBack.bytes}).`);
      }
      const { columns, row_count } = describeParquet(readBack.tail);
      return { location: written.location, bytes: readBack.bytes, row_count, columns, sha256 };
    } finally {
      await this.abort();
    }
  }

  /** Removes the spool file (after `finish`, or instead of it). */
  async abort(): Promise<void> {
    await this.handle?.close().catch(() => undefined);
    this.handle = undefined;
    await rm(this.spoolPath, { force: true });
  }

  private async writer(schema: DeclaredSchema): Promise<ParquetWriter> {
    if (this.parquet) return this.parquet;
    await mkdir(this.input.spoolDirectory, { recursive: true });
    this.handle = await open(this.spoolPath, 'wx', 0o600);
    this.spool = new SpoolWriter(this.handle);
    this.parquet = new ParquetWriter({ writer: this.spool, ...parquetSchemaOf(schema) });
    return this.parquet;
  }
}

/** The stored file read once as a stream: its digest, its size, and its last bytes (the footer). */
async function readBackOf(driver: StorageDriver, location: string): Promise<{ sha256: string; bytes: number; tail: Uint8Array }> {
  const hash = createHash('sha256');
  let bytes = 0;
  let tail: Buffer[] = [];
  let tailBytes = 0;
  await pipeline(
    await driver.readStream(location),
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        bytes += chunk.length;
        tail.push(chunk);
        tailBytes += chunk.length;
        while (tail.length > 1 && tailBytes - tail[0]!.length >= MAX_FOOTER_BYTES) tailBytes -= tail.shift()!.length;
        callback();
      },
    }),
  );
  const joined = Buffer.concat(tail);
  tail = [];
  return { sha256: hash.digest('hex'), bytes, tail: new Uint8Array(joined.buffer, joined.byteOffset, joined.byteLength) };
}
