import { createHash } from 'node:crypto';
import type { StoredColumn } from '@envengine/contracts';
import type { Row } from './declared-schema.ts';
import { decodeParquet } from './parquet-codec.ts';
import type { StorageDriver } from './storage-driver.ts';
import { storageDriverFor } from './storage-drivers.ts';

/** What to record of a written materialization; columns and row count are read from the stored file. */
export interface WrittenMaterialization {
  location: string;
  /** Size of the stored file. */
  bytes: number;
  row_count: number;
  columns: StoredColumn[];
  /**
   * SHA-256 of the stored file, hex. Parquet pages carry no checksum here (the writer,
   * `flat-parquet-writer.ts`, writes no page CRC and hyparquet checks none), so a changed byte in the data can decode
   * silently to other values; pass this to `readMaterialization` to detect that.
   */
  sha256: string;
}

export interface ReadMaterializationOptions {
  /** The driver to read through. Default: the driver for the location's own directory. */
  driver?: StorageDriver;
  /** The file's expected SHA-256 (hex), as the upload that stored it recorded it; checked when given. */
  sha256?: string;
}

/** The stored file does not hold what was written. */
export class StoredFileMismatchError extends Error {
  override readonly name = 'StoredFileMismatchError';
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
