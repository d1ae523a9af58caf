// One materialization's Parquet file as its bytes arrive from the asset's sandboxed child
// (which checks and encodes the rows: parquet-row-writer.ts): appended to a spool file on
// the worker's disk, then stored through the driver as a stream, read back, and described
// from its own footer, which must store the declared columns. The worker holds one chunk
// of bytes at a time, never the rows (docs/design.md#availability, issue 34).
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { resolveColumns, type DeclaredSchema } from './declared-schema.ts';
import { StoredFileMismatchError, type WrittenMaterialization } from './materialization.ts';
import { describeParquet, ParquetFileError } from './parquet-codec.ts';
import type { StorageDriver } from './storage-driver.ts';
import { materializationLocation } from './storage-locations.ts';

export interface MaterializationUploadInput {
  storagePrefix: string;
  assetKey: string;
  materializationId: string;
  /** The declared schema the file must store; null takes the columns the file's footer declares. */
  schema: DeclaredSchema | null;
  driver: StorageDriver;
  /** A directory of the worker's own where the file is written before it is stored. */
  spoolDirectory: string;
  /** The largest file it may write (the worker's disk is shared); past it `write` throws. Default: no limit. */
  maxBytes?: number;
}

/** An emit past the largest materialization the worker writes. */
export class MaterializationTooLargeError extends Error {
  override readonly name = 'MaterializationTooLargeError';
}

/** The footer of a file is read from the last bytes of its read-back: at most this much is kept. */
const MAX_FOOTER_BYTES = 16 * 1024 * 1024;

/**
 * The bytes of one Parquet file, written in order. `write` must not be called again
 * before the last call settled.
 */
export class MaterializationUpload {
  private bytes = 0;
  private readonly hash = createHash('sha256');
  private handle: FileHandle | undefined;
  private readonly spoolPath: string;

  constructor(private readonly input: MaterializationUploadInput) {
    this.spoolPath = join(input.spoolDirectory, `${input.materializationId}.${randomBytes(6).toString('hex')}.parquet.partial`);
  }

  /** Appends the next bytes of the file to the spool. */
  async write(chunk: Uint8Array): Promise<void> {
    if (chunk.byteLength === 0) return;
    const limit = this.input.maxBytes;
    if (limit !== undefined && this.bytes + chunk.byteLength > limit) {
      throw new MaterializationTooLargeError(`the materialization is over ${limit} bytes of Parquet (the limit of one emit)`);
    }
    if (this.handle === undefined) {
      await mkdir(this.input.spoolDirectory, { recursive: true });
      this.handle = await open(this.spoolPath, 'wx', 0o600);
    }
    this.hash.update(chunk);
    this.bytes += chunk.byteLength;
    await this.handle.write(chunk);
  }

  /** Stores the file, reads it back and describes what the store holds; refuses a file of other columns than the declared ones. */
  async finish(): Promise<WrittenMaterialization> {
    try {
      if (this.handle === undefined) throw new ParquetFileError('No bytes of a Parquet file were written.');
      const sha256 = this.hash.digest('hex');
      await this.handle.close();
      this.handle = undefined;
      const { storagePrefix, assetKey, materializationId, driver } = this.input;
      const location = materializationLocation(storagePrefix, assetKey, materializationId);
      const written = await driver.writeStream(location, () => createReadStream(this.spoolPath));
      const readBack = await readBackOf(driver, written.location);
      if (readBack.sha256 !== sha256) {
        throw new StoredFileMismatchError(`${written.location} does not hold the ${written.bytes} bytes just written (it holds ${readBack.bytes}).`);
      }
      const { columns, row_count } = describeParquet(readBack.tail);
      if (this.input.schema !== null) {
        const declared = resolveColumns(this.input.schema).map(({ name, type, nullable }) => ({ name, type, nullable }));
        if (JSON.stringify(columns) !== JSON.stringify(declared)) {
          await driver.remove(written.location).catch(() => undefined);
          throw new ParquetFileError(`The file stores the columns ${describeColumns(columns)}, not the declared ${describeColumns(declared)}.`);
        }
      }
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
}

function describeColumns(columns: ReadonlyArray<{ name: string; type: string; nullable: boolean }>): string {
  return columns.map(({ name, type, nullable }) => `${name} ${type}${nullable ? ' null' : ''}`).join(', ').slice(0, 500);
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
