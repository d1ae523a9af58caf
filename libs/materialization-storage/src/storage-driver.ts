import type { Readable } from 'node:stream';

/** Where an environment's materializations are kept, addressed by URL. */
export interface StorageDriver {
  /**
   * Stores `bytes` at `location` (a URL under the driver's prefix), replacing what was
   * there; a reader sees the old file, the new one, or nothing, never part of one.
   */
  write(location: string, bytes: Uint8Array): Promise<{ location: string; bytes: number }>;
  /** Stores what `open()` streams, as `write` does, without holding it in memory; `open` may be called again to retry. */
  writeStream(location: string, open: () => Readable): Promise<{ location: string; bytes: number }>;
  /** The bytes stored at `location`; a `StoredFileNotFoundError` when there are none. */
  read(location: string): Promise<Uint8Array>;
  /**
   * The bytes stored at `location` (only `range` of them when given), as a stream; a
   * `StoredFileNotFoundError` when there are none.
   */
  readStream(location: string, range?: ByteRange): Promise<Readable>;
  /** How many bytes are stored at `location`; a `StoredFileNotFoundError` when there are none. */
  size(location: string): Promise<number>;
  /** Removes what is stored at `location` (an environment's purge); nothing stored there is not an error. */
  remove(location: string): Promise<void>;
  /**
   * The files the engine wrote under the prefix, records or not (`isEngineWrittenName`, one
   * directory down: `<asset key>/<name>`), in location order after `after`, at most
   * `limit` of them; `next` is where the following page starts, null after the last.
   */
  listWritten(after: string | null, limit: number): Promise<{ locations: string[]; next: string | null }>;
  /** Lets go of what it holds open (connections), when it has any. */
  close?(): void;
}

/**
 * Whether a file name is one the engine writes under an asset's directory: a
 * materialization (`mat_<id>.parquet`) or the temporary file of one being written
 * (`.mat_<id>.parquet.<hex>.partial`). Only these are purged: another environment of the
 * same tenant may have a prefix inside this one, and its files are one level further down.
 */
export function isEngineWrittenName(name: string): boolean {
  return /^(mat_[0-9A-Za-z]+\.parquet|\.mat_[0-9A-Za-z]+\.parquet\.[0-9a-f]+\.partial)$/.test(name);
}

/** Bytes `start` to `end` of a file, both included (as HTTP's `Range` counts them). */
export interface ByteRange {
  start: number;
  end: number;
}

/** URL schemes `storageDriverFor` has a driver for. */
export const SUPPORTED_STORAGE_SCHEMES: readonly string[] = ['file', 's3'];

/** A storage prefix whose URL scheme no driver handles (or that is not a URL). */
export class UnsupportedStorageError extends Error {
  override readonly name = 'UnsupportedStorageError';
  constructor(
    readonly storagePrefix: string,
    /** The prefix's scheme without `:`, or null when it has none. */
    readonly scheme: string | null,
  ) {
    const supported = SUPPORTED_STORAGE_SCHEMES.map((name) => `${name}://`).join(', ');
    super(
      scheme === null
        ? `Storage prefix ${JSON.stringify(storagePrefix)} is not a URL; supported schemes: ${supported} (for example file:///var/lib/envengine/data).`
        : `Storage scheme "${scheme}://" of ${JSON.stringify(storagePrefix)} is not supported; supported schemes: ${supported}.`,
    );
  }
}

/** A location or prefix that is malformed or points outside the driver's prefix. */
export class StorageLocationError extends Error {
  override readonly name = 'StorageLocationError';
}

/** Nothing is stored at a location. */
export class StoredFileNotFoundError extends Error {
  override readonly name = 'StoredFileNotFoundError';
  constructor(readonly location: string, options?: ErrorOptions) {
    super(`Nothing is stored at ${location}.`, options);
  }
}
