import { createHash } from 'node:crypto';
import type { StoredColumn } from '@envengine/contracts';
import type { DeclaredSchema, Row } from './declared-schema.ts';
import { decodeParquet, describeParquet, encodeParquet } from './parquet-codec.ts';
import { materializationLocation, storageDriverFor, type StorageDriver } from './storage-driver.ts';

export interface WriteMaterializationInput {
  /** The environment's storage prefix, a URL such as `file:///var/lib/envengine/prod`. */
  storagePrefix: string;
  assetKey: string;
  materializationId: string;
  /** The asset's declared schema; the rows are checked against it. */
  schema: DeclaredSchema;
  rows: readonly Row[];
  /** The driver to store through. Default: `storageDriverFor(storagePrefix)`. */
  driver?: StorageDriver;
}

/** What to record of a written materialization; columns and row count are read from the stored file. */
export interface WrittenMaterialization {
  location: string;
  /** Size of the stored file. */
  bytes: number;
  row_count: number;
  columns: StoredColumn[];
  /**
   * SHA-256 of the stored file, hex. Parquet pages carry no checksum here (hyparquet-writer
   * writes no page CRC and hyparquet checks none), so a changed byte in the data can decode
   * silently to other values; pass this to `readMaterialization` to detect that.
   */
  sha256: string;
}

export interface ReadMaterializationOptions {
  /** The driver to read through. Default: the driver for the location's own directory. */
  driver?: StorageDriver;
  /** The file's expected SHA-256 (hex), as `writeMaterialization` returned it; checked when given. */
  sha256?: string;
}

/** The stored file does not hold what was written. */
export class StoredFileMismatchError extends Error {
  override readonly name = 'StoredFileMismatchError';
}

/**
 * Checks the rows against the declared schema (`RowSchemaError` on the first mismatch),
 * encodes them as Parquet, stores the file at `materializationLocation(...)`, then reads it
 * back through the driver and describes what it actually holds.
 */
export async function writeMaterialization(input: WriteMaterializationInput): Promise<WrittenMaterialization> {
  const { storagePrefix, assetKey, materializationId, schema, rows } = input;
  const location = materializationLocation(storagePrefix, assetKey, materializationId);
  const driver = input.driver ?? storageDriverFor(storagePrefix);
  const encoded = encodeParquet(schema, rows);
  const written = await driver.write(location, encoded);
  const stored = await driver.read(written.location);
  if (!sameBytes(stored, encoded)) {
    throw new StoredFileMismatchError(`${written.location} does not hold the ${encoded.byteLength} bytes just written (it holds ${stored.byteLength}).`);
  }
  const { columns, row_count } = describeParquet(stored);
  return { location: written.location, bytes: stored.byteLength, row_count, columns, sha256: sha256Of(stored) };
}

/**
 * The rows of a stored materialization, as `decodeParquet` returns them; a
 * `StoredFileMismatchError` when `sha256` is given and the file does not match it.
 */
export async function readMaterialization(location: string, options: ReadMaterializationOptions = {}): Promise<Row[]> {
  const driver = options.driver ?? storageDriverFor(location.slice(0, location.lastIndexOf('/') + 1));
  const bytes = await driver.read(location);
  if (options.sha256 !== undefined && sha256Of(bytes) !== options.sha256.toLowerCase()) {
    throw new StoredFileMismatchError(`${location} has changed since it was written: its SHA-256 is not ${options.sha256}.`);
  }
  return decodeParquet(bytes);
}

function sha256Of(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}
