import { createHash } from 'node:crypto';
import { Transform, type Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { ApiError } from '@envengine/service-kit';

export interface ReadBundle {
  sha256: string;
  size: number;
  /** File paths inside the archive, without a leading `./`. */
  entries: string[];
}

function tooLarge(limitBytes: number): ApiError {
  return new ApiError('payload_too_large', `The bundle exceeds ${limitBytes} bytes.`, { headers: { Connection: 'close' } });
}

function notATarGz(): ApiError {
  return new ApiError('invalid_request', 'The bundle is not a readable tar.gz archive with at least one file.', {
    details: [{ path: '(body)', message: 'must be a gzip-compressed tar archive holding the project files' }],
  });
}

/**
 * Streams an upload to `sink` while hashing it, counting it against the limit, and
 * listing the tar entries it holds; the archive is never held in memory whole. Fails with
 * 413 past the limit and 422 when the bytes are not a tar.gz.
 */
export async function readBundle(upload: Readable, sink: Writable, limitBytes: number): Promise<ReadBundle> {
  const hash = createHash('sha256');
  const entries: string[] = [];
  let size = 0;
  let archiveError: Error | undefined;

  const gunzip = createGunzip();
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    if (header.type === 'file') entries.push(header.name.replace(/^\.\//, ''));
    stream.on('end', () => next());
    stream.resume();
  });
  const listing = pipeline(gunzip, extract).catch((error: Error) => {
    archiveError = error;
  });

  // Each chunk goes to storage and to the archive reader, which paces the upload too.
  const inspect = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > limitBytes) {
        callback(tooLarge(limitBytes));
        return;
      }
      hash.update(chunk);
      if (archiveError || gunzip.write(chunk)) callback(null, chunk);
      else gunzip.once('drain', () => callback(null, chunk));
    },
    flush(callback) {
      gunzip.end();
      callback();
    },
  });

  await pipeline(upload, inspect, sink);
  await listing;
  // An archive without a single file holds no code to deploy either.
  if (archiveError || size === 0 || entries.length === 0) throw notATarGz();
  return { sha256: hash.digest('hex'), size, entries };
}
