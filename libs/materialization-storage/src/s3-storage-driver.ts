import type { Readable } from 'node:stream';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { LookupFunction } from 'node:net';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Upload } from '@aws-sdk/lib-storage';
import { isEngineWrittenName, StorageLocationError, StoredFileNotFoundError, type ByteRange, type StorageDriver } from './storage-driver.ts';

/** How to reach an S3-compatible store: what an asset's binding gives (or the engine issues for its own store). */
export interface S3Connection {
  /** `http(s)://host[:port]` of the store (AWS S3, SeaweedFS, MinIO, R2, Ceph). */
  endpoint: string;
  region: string;
  /** Address buckets as `endpoint/bucket` rather than `bucket.endpoint` (most self-hosted stores need it). */
  forcePathStyle: boolean;
  accessKeyId: string;
  secretAccessKey: string;
  /**
   * Put before every object key: the engine's own store keeps each tenant under its own
   * prefix, which is all its credentials reach. Empty for a tenant's own store.
   */
  keyPrefix: string;
  /** How the store's name is resolved (a guard that refuses some addresses); Node's own by default. */
  lookup?: LookupFunction;
}

/** The store refused or failed an operation; the message names the store, bucket and key, never a credential. */
export class ObjectStoreError extends Error {
  override readonly name = 'ObjectStoreError';
  constructor(message: string, readonly code: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** Parts of this size are uploaded as they are cut from the file; a smaller file is one PUT. */
export const S3_PART_BYTES = 8 * 1024 * 1024;
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Bucket and key of an `s3://bucket/key` URL; the key must be non-empty and free of `.`/`..` segments. */
export function s3ObjectOf(url: string): { bucket: string; key: string } {
  const match = /^s3:\/\/([^/]+)\/(.+)$/i.exec(url);
  if (match === null) throw new StorageLocationError(`${JSON.stringify(url)} is not an s3://bucket/key URL.`);
  const [, bucket, key] = match as unknown as [string, string, string];
  if (!BUCKET_NAME.test(bucket)) {
    throw new StorageLocationError(`${JSON.stringify(bucket)} is not a bucket name (3 to 63 lower-case letters, digits, "." and "-").`);
  }
  if (/[\\?#\0]/.test(key) || key.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) {
    throw new StorageLocationError(`${JSON.stringify(url)} has an empty, "." or ".." segment, a backslash, query, fragment or NUL.`);
  }
  return { bucket, key };
}

/**
 * Why an `s3://` storage prefix is malformed, or null: it must name a bucket and may name a
 * prefix under it (`s3://lake` or `s3://lake/prod`), with no empty, `.` or `..` segment.
 * The bucket's name is left to the store (some accept names AWS refuses); a name the
 * driver cannot use fails the first emit with a message that says so.
 */
export function s3StoragePrefixProblem(storagePrefix: string): string | null {
  if (!/^s3:/i.test(storagePrefix)) return null;
  const match = /^s3:\/\/([^/\\?#\s*]+)(\/[^\\?#*]*)?$/i.exec(storagePrefix);
  const segments = (match?.[2] ?? '').replace(/\/+$/, '').split('/').slice(1);
  // A bucket alone (s3://lake, s3://lake/) would hold every other environment's keys under it, and a
  // wildcard would reach into the access policy made from the prefix.
  if (match === null || segments.length === 0 || segments.some((segment) => segment === '' || segment === '.' || segment === '..')) {
    return `An s3:// storage prefix is s3://<bucket>/<path>: a bucket and at least one path segment, with no empty, "." or ".." segment and no "*" or "?" (for example s3://lake/prod); ${storagePrefix} is not.`;
  }
  return null;
}

/**
 * Stores files in an S3-compatible bucket. A file is uploaded by `@aws-sdk/lib-storage`:
 * one PUT when small, else a multipart upload whose parts are sent as they are cut (four
 * at a time) and which is aborted on failure, so a failed upload leaves no object. Either
 * way the object appears whole or not at all. Request checksums are sent only where the
 * API requires them: the SDK's default CRC32 trailers break several S3-compatible stores.
 */
export class S3StorageDriver implements StorageDriver {
  private readonly client: S3Client;

  constructor(
    /** `s3://bucket/prefix`: every location must be under it. */
    readonly prefix: string,
    private readonly connection: S3Connection,
  ) {
    this.client = new S3Client({
      endpoint: connection.endpoint,
      region: connection.region,
      forcePathStyle: connection.forcePathStyle,
      credentials: { accessKeyId: connection.accessKeyId, secretAccessKey: connection.secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      ...(connection.lookup
        ? {
            requestHandler: new NodeHttpHandler({
              httpAgent: new HttpAgent({ keepAlive: true, lookup: connection.lookup }),
              httpsAgent: new HttpsAgent({ keepAlive: true, lookup: connection.lookup }),
            }),
          }
        : {}),
    });
  }

  /** Closes the client's connections (the driver is not used after). */
  close(): void {
    this.client.destroy();
  }

  /** Bucket and stored key of a location under the prefix. */
  objectOf(location: string): { bucket: string; key: string } {
    const base = this.prefix.replace(/\/+$/, '');
    if (!location.startsWith(`${base}/`)) throw new StorageLocationError(`${location} is not under the storage prefix ${this.prefix}.`);
    const { bucket, key } = s3ObjectOf(location);
    return { bucket, key: `${this.connection.keyPrefix}${key}` };
  }

  async write(location: string, bytes: Uint8Array): Promise<{ location: string; bytes: number }> {
    await this.upload(location, bytes);
    return { location, bytes: bytes.byteLength };
  }

  /** Streamed in parts of S3_PART_BYTES (a multipart upload past one part): at most `queueSize` parts in memory. */
  async writeStream(location: string, open: () => Readable): Promise<{ location: string; bytes: number }> {
    let bytes = 0;
    const source = open();
    source.on('data', (chunk: Buffer) => (bytes += chunk.length));
    await this.upload(location, source);
    return { location, bytes };
  }

  async readStream(location: string, range?: ByteRange): Promise<Readable> {
    const { bucket, key } = this.objectOf(location);
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: bucket, Key: key, ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}) }));
      return answer.Body as Readable;
    } catch (error) {
      if (error instanceof S3ServiceException && error.name === 'NoSuchKey') throw new StoredFileNotFoundError(location, { cause: error });
      throw this.describe(error, 'read', location);
    }
  }

  async size(location: string): Promise<number> {
    const { bucket, key } = this.objectOf(location);
    try {
      const answer = await this.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      return answer.ContentLength ?? 0;
    } catch (error) {
      // A HEAD has no body, so a missing key is a bare 404 ("NotFound"), not "NoSuchKey".
      if (error instanceof S3ServiceException && (error.name === 'NotFound' || error.name === 'NoSuchKey')) throw new StoredFileNotFoundError(location, { cause: error });
      throw this.describe(error, 'read', location);
    }
  }

  private async upload(location: string, body: Uint8Array | Readable): Promise<void> {
    const { bucket, key } = this.objectOf(location);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: bucket, Key: key, Body: body, ContentType: 'application/vnd.apache.parquet' },
      partSize: S3_PART_BYTES,
      queueSize: 4,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (error) {
      throw this.describe(error, 'write', location);
    }
  }

  async read(location: string): Promise<Uint8Array> {
    const { bucket, key } = this.objectOf(location);
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      return await answer.Body!.transformToByteArray();
    } catch (error) {
      if (error instanceof S3ServiceException && error.name === 'NoSuchKey') throw new StoredFileNotFoundError(location, { cause: error });
      throw this.describe(error, 'read', location);
    }
  }

  async listWritten(after: string | null, limit: number): Promise<{ locations: string[]; next: string | null }> {
    const base = this.prefix.replace(/\/+$/, '');
    const { bucket, key: baseKey } = this.objectOf(`${base}/x`);
    const listed = baseKey.slice(0, -1);
    const locationOf = (key: string) => `${base}/${key.slice(listed.length)}`;
    try {
      const answer = await this.client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: listed, MaxKeys: limit, ...(after === null ? {} : { StartAfter: this.objectOf(after).key }) }),
      );
      const keys = (answer.Contents ?? []).map((object) => object.Key!).filter((key) => key.startsWith(listed));
      // Only `<asset key>/<engine-written name>`: one directory down, no deeper.
      const locations = keys.filter((key) => {
        const segments = key.slice(listed.length).split('/');
        return segments.length === 2 && segments[0] !== '' && isEngineWrittenName(segments[1]!);
      });
      const last = keys[keys.length - 1];
      return { locations: locations.map(locationOf), next: answer.IsTruncated && last !== undefined ? locationOf(last) : null };
    } catch (error) {
      throw this.describe(error, 'read', `${base}/`);
    }
  }

  async remove(location: string): Promise<void> {
    const { bucket, key } = this.objectOf(location);
    try {
      // S3 answers a delete of a missing key with success: removing twice is fine.
      await this.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
    } catch (error) {
      throw this.describe(error, 'remove', location);
    }
  }

  /** A sentence naming what failed and what to check; the store's own code kept. */
  private describe(error: unknown, operation: 'read' | 'write' | 'remove', location: string): ObjectStoreError {
    const where = `${operation} ${location} at ${this.connection.endpoint}`;
    if (!(error instanceof S3ServiceException)) {
      const cause = error as NodeJS.ErrnoException;
      if (cause.code === 'EREFUSEDADDRESS') return new ObjectStoreError(`Could not ${where}: ${cause.message}.`, cause.code, { cause: error });
      return new ObjectStoreError(`Could not ${where}: the store did not answer (${cause.code ?? cause.message}).`, cause.code ?? 'unreachable', { cause: error });
    }
    const bucket = s3ObjectOf(location).bucket;
    const sentence: Record<string, string> = {
      NoSuchBucket: `the bucket "${bucket}" does not exist`,
      InvalidAccessKeyId: 'the store does not know the binding\'s access_key_id',
      SignatureDoesNotMatch: 'the binding\'s secret_access_key does not match its access_key_id',
      AccessDenied: 'the credentials may not do this there',
      InvalidBucketName: `"${bucket}" is not a bucket name`,
    };
    const reason = sentence[error.name] ?? error.message;
    return new ObjectStoreError(`Could not ${where}: ${reason} (${error.name}).`, error.name, { cause: error });
  }
}
