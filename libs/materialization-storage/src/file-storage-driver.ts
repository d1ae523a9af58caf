import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { isEngineWrittenName, StorageLocationError, StoredFileNotFoundError, type ByteRange, type StorageDriver } from './storage-driver.ts';
import { LOCATION_SEGMENT, prefixBase } from './storage-locations.ts';

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
