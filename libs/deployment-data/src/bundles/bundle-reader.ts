import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { once } from 'node:events';
import { Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import type { BundleLimits } from '@envengine/contracts';
import { ApiError, drainRefusedBody, uploadCutOff, whenUploadCutOff } from '@envengine/service-kit';

export interface ReadBundle {
  sha256: string;
  size: number;
  /** File paths inside the archive, without a leading `./`. */
  entries: string[];
  /** Each file's path and the SHA-256 (hex) of its content, in archive order: what a diff of two deployments compares. */
  files: BundleFile[];
}

export interface BundleFile {
  path: string;
  sha256: string;
}

function tooLarge(limitBytes: number): ApiError {
  return new ApiError('payload_too_large', `The bundle exceeds ${limitBytes} bytes.`, { headers: { Connection: 'close' } });
}

function unpacksTooLarge(limits: BundleLimits, what: 'bytes' | 'files'): ApiError {
  const message =
    what === 'bytes'
      ? `The bundle unpacks to more than ${limits.unpackedBytes} bytes (the limit of its unpacked size).`
      : `The bundle holds more than ${limits.files} files (the limit of its file count).`;
  return new ApiError('payload_too_large', message, { headers: { Connection: 'close' } });
}

/** What a tar header says of an entry, as far as its safety goes. */
export interface TarEntryHeader {
  name: string;
  type?: string | null;
  linkname?: string | null;
}

/** Whether a path inside the archive (already normalized, POSIX) leaves the bundle's folder. */
const leaves = (path: string) => path.startsWith('/') || path === '..' || path.startsWith('../');

/**
 * Why an entry may not be in a bundle, or null: a path that is absolute or leaves the
 * bundle's folder through `..`, a symbolic or hard link whose target does, and anything
 * that is not a file, a folder or a link (devices, FIFOs). Such a bundle used to be stored
 * and failed only when a worker unpacked it; it is refused at upload now.
 */
export function unsafeEntryReason(header: TarEntryHeader): string | null {
  const name = header.name;
  if (name.includes('\0')) return 'its path holds a NUL character';
  if (name.startsWith('/')) return 'its path is absolute';
  const path = posix.normalize(name);
  if (leaves(path)) return 'its path leaves the bundle (through "..")';
  switch (header.type ?? 'file') {
    case 'file':
    case 'contiguous-file':
    case 'directory':
      return null;
    case 'symlink': {
      const target = header.linkname ?? '';
      // A symbolic link's target is relative to the link's own folder.
      if (target.startsWith('/') || leaves(posix.normalize(posix.join(posix.dirname(path), target)))) return `it is a symbolic link to "${target}", outside the bundle`;
      return null;
    }
    case 'link': {
      const target = header.linkname ?? '';
      // A hard link names another entry of the archive, from its root.
      if (target.startsWith('/') || leaves(posix.normalize(target))) return `it is a hard link to "${target}", outside the bundle`;
      return null;
    }
    default:
      return `it is a ${header.type} entry; a bundle holds files, folders and links inside it only`;
  }
}

function unsafeEntry(name: string, reason: string): ApiError {
  const shown = JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}…` : name);
  return new ApiError('invalid_request', `The bundle's entry ${shown} is refused: ${reason}. Nothing was stored.`, {
    details: [{ path: '(body)', message: `entry ${shown}: ${reason}` }],
    headers: { Connection: 'close' },
  });
}

function notATarGz(): ApiError {
  return new ApiError('invalid_request', 'The bundle is not a readable tar.gz archive with at least one file.', {
    details: [{ path: '(body)', message: 'must be a gzip-compressed tar archive holding the project files' }],
  });
}

/**
 * Streams an upload to `sink` while hashing it, counting it against the limits, and
 * listing the tar entries it holds; the archive is never held in memory whole, nor
 * unpacked anywhere. Fails with 413 past a limit (the upload's size, what it unpacks to,
 * or its file count: a tar bomb stops at the first header that goes past, before its
 * content is inflated) and 422 when the bytes are not a tar.gz or hold an unsafe entry
 * (`unsafeEntryReason`: named in the answer, refused at its header).
 */
export async function readBundle(upload: Readable, sink: Writable, limits: BundleLimits): Promise<ReadBundle> {
  const limitBytes = limits.bytes;
  const hash = createHash('sha256');
  const entries: string[] = [];
  const files: BundleFile[] = [];
  let size = 0;
  let unpacked = 0;
  let fileCount = 0;
  let archiveError: Error | undefined;
  /** A limit the archive went past: the answer, whatever else happens. */
  let refusal: ApiError | undefined;

  const gunzip = createGunzip();
  const extract = tar.extract();
  const refuse = (error: ApiError) => {
    refusal ??= error;
    gunzip.destroy(error);
    extract.destroy(error);
  };
  // Everything inflated counts, headers too (a long pax header is held in memory by the reader).
  gunzip.on('data', (chunk: Buffer) => {
    unpacked += chunk.length;
    if (unpacked > limits.unpackedBytes) refuse(unpacksTooLarge(limits, 'bytes'));
  });
  extract.on('entry', (header, stream, next) => {
    // A refusal destroys the entry being read with it: its error is the refusal's.
    stream.on('error', () => undefined);
    fileCount += 1;
    if (fileCount > limits.files) return refuse(unpacksTooLarge(limits, 'files'));
    // Its declared size is what the reader will inflate: refused before any of it is.
    if (unpacked + (header.size ?? 0) > limits.unpackedBytes) return refuse(unpacksTooLarge(limits, 'bytes'));
    const unsafe = unsafeEntryReason(header);
    if (unsafe !== null) return refuse(unsafeEntry(header.name, unsafe));
    if (header.type !== 'file') {
      stream.on('end', () => next());
      stream.resume();
      return;
    }
    const path = header.name.replace(/^\.\//, '');
    entries.push(path);
    const content = createHash('sha256');
    stream.on('data', (chunk: unknown) => void content.update(chunk as Buffer));
    stream.on('end', () => {
      files.push({ path, sha256: content.digest('hex') });
      next();
    });
  });
  // Settles on every path: the archive read to its end, or the first error of either stream.
  const listing = new Promise<void>((resolve) => {
    let settled = false;
    const settle = (error?: Error) => {
      if (settled) return;
      settled = true;
      if (error) archiveError = error;
      resolve();
    };
    gunzip.on('error', settle);
    extract.on('error', settle);
    extract.on('finish', () => settle());
    gunzip.pipe(extract);
  });
  let listingDone = false;
  void listing.then(() => {
    listingDone = true;
  });

  // Each chunk goes to storage and to the archive reader, which paces the upload too.
  const inspect = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > limitBytes) {
        callback(tooLarge(limitBytes));
        return;
      }
      // Past what it may unpack to, or not a tar.gz: say so now rather than after storing the rest.
      if (refusal || archiveError) {
        callback(refusal ?? notATarGz());
        return;
      }
      hash.update(chunk);
      // Once the archive is read (or broken), the rest is only hashed and stored.
      if (listingDone || gunzip.write(chunk)) {
        callback(null, chunk);
        return;
      }
      // Paced by the archive reader, unless it stops reading first.
      void Promise.race([once(gunzip, 'drain').catch(() => undefined), listing]).then(() => callback(null, chunk));
    },
    flush(callback) {
      if (!listingDone) gunzip.end();
      callback();
    },
  });

  // The upload is piped, not pipelined: on failure it must stay open (and be drained) so
  // that the answer can still be written on its connection. Piping passes no error on, so
  // an upload that breaks off (its sender gone) ends the pipeline here: left waiting, it
  // would hold the half-written sink open for good.
  const detach = whenUploadCutOff(upload, () => inspect.destroy(uploadCutOff()));
  upload.pipe(inspect);
  try {
    await pipeline(inspect, sink);
  } catch (error) {
    upload.unpipe(inspect);
    gunzip.destroy();
    extract.destroy();
    await drainRefusedBody(upload);
    throw error;
  } finally {
    detach();
  }
  await listing;
  if (refusal) throw refusal;
  // An archive without a single file holds no code to deploy either.
  if (archiveError || size === 0 || entries.length === 0) throw notATarGz();
  return { sha256: hash.digest('hex'), size, entries, files };
}

/**
 * Each file's path and content hash of a bundle already stored (checked at its upload):
 * for bundles stored before uploads recorded them.
 */
export async function storedBundleFiles(stored: Readable): Promise<BundleFile[]> {
  const files: BundleFile[] = [];
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    if (header.type !== 'file') {
      stream.on('end', () => next());
      stream.resume();
      return;
    }
    const content = createHash('sha256');
    stream.on('data', (chunk: unknown) => void content.update(chunk as Buffer));
    stream.on('end', () => {
      files.push({ path: header.name.replace(/^\.\//, ''), sha256: content.digest('hex') });
      next();
    });
  });
  await pipeline(stored, createGunzip(), extract);
  return files;
}
