import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { S3StorageDriver, type S3Connection } from './s3-storage-driver.ts';

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

/**
 * The absolute path of a `file://` URL (`file:///abs/path` or `file://localhost/abs/path`),
 * refusing what the WHATWG URL parser would silently rewrite: `.` and `..` segments (also
 * percent-encoded), backslashes, empty segments, a query or a fragment.
 */
function filePathOf(url: string): string {
  const match = /^file:\/\/(?:localhost)?(\/.*)$/i.exec(url);
  if (match === null) {
    throw new StorageLocationError(`${JSON.stringify(url)} is not an absolute file:// URL (file:///absolute/path).`);
  }
  const raw = match[1]!;
  if (/[\\?#\0]/.test(raw)) throw new StorageLocationError(`${JSON.stringify(url)} has a backslash, query, fragment or NUL.`);
  const segments = raw.slice(1).split('/');
  if (segments.at(-1) === '') segments.pop(); // a trailing slash
  const decoded = segments.map((segment) => {
    let name: string;
    try {
      name = decodeURIComponent(segment);
    } catch {
      throw new StorageLocationError(`${JSON.stringify(url)} has a malformed percent-encoding.`);
    }
    if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
      throw new StorageLocationError(`${JSON.stringify(url)} has an empty, "." or ".." segment, or an encoded "/".`);
    }
    return name;
  });
  return `/${decoded.join('/')}`;
}

/**
 * Stores files under a `file://` prefix on the local file system: directories are created
 * as needed, and each file is written to a temporary name in its directory, flushed, then
 * renamed into place.
 */
export class FileStorageDriver implements StorageDriver {
  /** The absolute directory every location must be under. */
  readonly rootPath: string;

  /** @param prefix a `file:///absolute/dir` URL every location must be under */
  constructor(readonly prefix: string) {
    this.rootPath = filePathOf(prefix);
  }

  /** The absolute path of a location, which must lie strictly under the prefix. */
  pathOf(location: string): string {
    const path = filePathOf(location);
    // Both paths are absolute with no "." or ".." segments, so a prefix test is exact.
    if (!path.startsWith(this.rootPath === '/' ? '/' : `${this.rootPath}/`) || path === this.rootPath) {
      throw new StorageLocationError(`${location} is not under the storage prefix ${this.prefix}.`);
    }
    return path;
  }

  write(location: string, bytes: Uint8Array): Promise<{ location: string; bytes: number }> {
    return this.writeWith(location, async (handle) => {
      await handle.writeFile(bytes);
      return bytes.byteLength;
    });
  }

  writeStream(location: string, openSource: () => Readable): Promise<{ location: string; bytes: number }> {
    return this.writeWith(location, async (handle) => {
      let bytes = 0;
      for await (const chunk of openSource()) {
        await handle.write(chunk as Buffer);
        bytes += (chunk as Buffer).length;
      }
      return bytes;
    });
  }

  private async writeWith(location: string, fill: (handle: FileHandle) => Promise<number>): Promise<{ location: string; bytes: number }> {
    const target = this.pathOf(location);
    const directory = dirname(target);
    await mkdir(directory, { recursive: true });
    // Same directory, so the rename is atomic; the leading dot keeps listings tidy.
    const temporary = join(directory, `.${basename(target)}.${randomBytes(6).toString('hex')}.partial`);
    let handle: FileHandle | undefined;
    let bytes: number;
    try {
      handle = await open(temporary, 'wx', 0o644);
      bytes = await fill(handle);
      await handle.sync();
      await handle.close();
      handle = undefined;
      await rename(temporary, target);
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await rm(temporary, { force: true });
      throw error;
    }
    await syncDirectory(directory);
    return { location, bytes };
  }

  async read(location: string): Promise<Uint8Array> {
    const path = this.pathOf(location);
    try {
      const buffer = await readFile(path);
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new StoredFileNotFoundError(location, { cause: error });
      throw error;
    }
  }

  async readStream(location: string, range?: ByteRange): Promise<Readable> {
    const path = this.pathOf(location);
    try {
      const handle = await open(path, 'r');
      return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new StoredFileNotFoundError(location, { cause: error });
      throw error;
    }
  }

  async size(location: string): Promise<number> {
    const path = this.pathOf(location);
    try {
      const stats = await stat(path);
      if (!stats.isFile()) throw new StoredFileNotFoundError(location);
      return stats.size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new StoredFileNotFoundError(location, { cause: error });
      throw error;
    }
  }

  async listWritten(after: string | null, limit: number): Promise<{ locations: string[]; next: string | null }> {
    const base = prefixBase(this.prefix);
    const locations: string[] = [];
    const directories = (await readdirIfAny(this.rootPath)).filter((entry) => entry.isDirectory() && LOCATION_SEGMENT.test(entry.name));
    for (const directory of directories.map((entry) => entry.name).sort()) {
      const within = `${base}/${directory}/`;
      // Whole directories before the cursor are passed without being read.
      if (after !== null && after >= `${within}\uffff`) continue;
      const files = (await readdirIfAny(join(this.rootPath, directory))).filter((entry) => entry.isFile() && isEngineWrittenName(entry.name));
      for (const location of files.map((entry) => `${within}${entry.name}`).sort()) {
        if (after !== null && location <= after) continue;
        if (locations.length === limit) return { locations, next: locations[locations.length - 1]! };
        locations.push(location);
      }
    }
    return { locations, next: null };
  }

  async remove(location: string): Promise<void> {
    // A symbolic link is removed itself, never what it points at.
    await rm(this.pathOf(location), { force: true });
  }
}

/** A directory's entries; none when it does not exist (nothing was written there). */
async function readdirIfAny(path: string) {
  try {
    return await readdir(path, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw error;
  }
}

/** Makes a rename durable: the directory entry is flushed too (best effort where unsupported). */
async function syncDirectory(directory: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(directory, 'r');
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on a directory; the file itself is already flushed.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * Why a storage prefix may not be used on this engine, or null. A `file://` prefix must
 * name the engine's storage root or a directory under it (`rootPath`, absolute): the
 * engine's runner writes and reads there on tenants' behalf, so no tenant may point it at
 * another path of the engine host. Other schemes are not checked here.
 */
export function fileStoragePrefixProblem(storagePrefix: string, rootPath: string): string | null {
  if (!/^file:/i.test(storagePrefix)) return null;
  let path: string;
  try {
    path = filePathOf(storagePrefix);
  } catch (error) {
    return (error as Error).message;
  }
  const root = rootPath.length > 1 && rootPath.endsWith('/') ? rootPath.slice(0, -1) : rootPath;
  if (path === root || path.startsWith(root === '/' ? '/' : `${root}/`)) return null;
  return `A file:// storage prefix must be under the engine's storage root, file://${root}/ (for example file://${root}/prod); ${storagePrefix} is not.`;
}

/**
 * The directory a `file://` storage prefix names, with a trailing slash (`/lake/prod/`), to
 * tell whether two prefixes overlap; null for another scheme or a prefix that is not a file URL.
 */
export function fileStorageDirectoryOf(storagePrefix: string): string | null {
  if (!/^file:/i.test(storagePrefix)) return null;
  try {
    const path = filePathOf(storagePrefix);
    return path === '/' ? path : `${path}/`;
  } catch {
    return null;
  }
}

/** The URL scheme of a storage prefix or location, lower-case, or null when it has none. */
export function storageSchemeOf(url: string): string | null {
  return /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url)?.[1]?.toLowerCase() ?? null;
}

/**
 * The driver for a storage prefix, chosen by its URL scheme: `file://` needs nothing more;
 * `s3://` needs the connection of the asset's binding.
 */
export function storageDriverFor(storagePrefix: string, s3?: S3Connection): StorageDriver {
  const scheme = storageSchemeOf(storagePrefix);
  if (scheme === 'file') return new FileStorageDriver(storagePrefix);
  if (scheme === 's3') {
    if (!s3) throw new StorageLocationError(`${storagePrefix} is in object storage; its binding's connection (endpoint and keys) is needed to reach it.`);
    return new S3StorageDriver(storagePrefix, s3);
  }
  throw new UnsupportedStorageError(storagePrefix, scheme);
}

const LOCATION_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The prefix without its trailing slashes (those of `scheme://` kept). */
function prefixBase(storagePrefix: string): string {
  let base = storagePrefix;
  while (base.endsWith('/') && !base.endsWith('://')) base = base.slice(0, -1);
  return base;
}

/**
 * Whether `location` names something strictly under `storagePrefix`, by its text: no
 * `.`/`..` segment (also percent-encoded), backslash, query or fragment can take it out.
 */
export function isUnderStoragePrefix(storagePrefix: string, location: string): boolean {
  const base = prefixBase(storagePrefix);
  if (!location.startsWith(`${base}/`)) return false;
  const rest = location.slice(base.length + 1);
  if (/[\\?#\0]/.test(rest)) return false;
  return rest.split('/').every((segment) => {
    let name: string;
    try {
      name = decodeURIComponent(segment);
    } catch {
      return false;
    }
    return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\\');
  });
}

/**
 * Where a materialization is stored: `<storage prefix>/<asset key>/<materialization id>.parquet`,
 * the prefix's trailing slashes dropped. The key and id must be plain names (letters,
 * digits, `.`, `_`, `-`, no `..`), so that they stay one path segment each.
 */
export function materializationLocation(storagePrefix: string, assetKey: string, materializationId: string): string {
  for (const [label, value] of [['Asset key', assetKey], ['Materialization id', materializationId]] as const) {
    if (!LOCATION_SEGMENT.test(value) || value.includes('..')) {
      throw new StorageLocationError(`${label} ${JSON.stringify(value)} cannot be a path segment (letters, digits, ".", "_", "-"; no "..").`);
    }
  }
  return `${prefixBase(storagePrefix)}/${assetKey}/${materializationId}.parquet`;
}
