import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import mongoose, { Schema, type Connection } from 'mongoose';
import type { BundleLimits } from '@envengine/contracts';
import { isDuplicateKeyError } from '@envengine/service-kit';
import { TenantScopedModel } from '@envengine/tenant-data';
import { readBundle } from './bundle-reader.ts';

/** One bundle of one tenant: its GridFS file and what the archive holds. */
interface BundleDocument {
  /** `<tenant>/<bundle ref>`: a bundle belongs to the caller who uploaded it. */
  _id: string;
  tenant_id: string;
  bundle_ref: string;
  size: number;
  file_id: mongoose.Types.ObjectId;
  entries: string[];
  inserted_at: Date;
}

const bundleSchema = new Schema<BundleDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    bundle_ref: { type: String, required: true },
    size: { type: Number, required: true },
    file_id: { type: Schema.Types.ObjectId, required: true },
    entries: { type: [String], required: true },
    inserted_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'bundles' },
);

const bundleKey = (tenantId: string, ref: string) => `${tenantId}/${ref}`;

/** Content-addressed bundles in GridFS, scoped to the tenant that uploaded them. */
export class BundleRepository {
  private readonly bundles: TenantScopedModel<BundleDocument>;
  private readonly bucket: mongoose.mongo.GridFSBucket;

  constructor(connection: Connection) {
    this.bundles = TenantScopedModel.of(connection, 'Bundle', bundleSchema);
    this.bucket = new mongoose.mongo.GridFSBucket(connection.db!, { bucketName: 'bundle_files' });
  }

  ensureIndexes(): Promise<void> {
    return this.bundles.ensureIndexes();
  }

  /**
   * Stores an upload; the server hashes it itself. The same bytes again keep the first
   * copy (`created` false) and the new one is dropped.
   */
  async store(tenantId: string, upload: Readable, limits: BundleLimits): Promise<{ bundleRef: string; size: number; created: boolean }> {
    const sink = this.bucket.openUploadStream(`upload-${randomBytes(8).toString('hex')}`, { metadata: { tenant_id: tenantId } });
    let read;
    try {
      read = await readBundle(upload, sink, limits);
    } catch (error) {
      await this.bucket.delete(sink.id).catch(() => undefined);
      throw error;
    }
    const bundleRef = `sha256:${read.sha256}`;
    try {
      await this.bundles.insert(tenantId, {
        _id: bundleKey(tenantId, bundleRef),
        bundle_ref: bundleRef,
        size: read.size,
        file_id: sink.id,
        entries: read.entries,
        inserted_at: new Date(),
      });
      return { bundleRef, size: read.size, created: true };
    } catch (error) {
      await this.bucket.delete(sink.id).catch(() => undefined);
      if (isDuplicateKeyError(error)) return { bundleRef, size: read.size, created: false };
      throw error;
    }
  }

  async exists(tenantId: string, bundleRef: string): Promise<boolean> {
    return (await this.bundles.findOne(tenantId, { _id: bundleKey(tenantId, bundleRef) }, { projection: { _id: 1 } })) !== null;
  }

  /** The bundle's bytes as stored, or null when the tenant has no such bundle. */
  async open(tenantId: string, bundleRef: string): Promise<{ size: number; stream: Readable } | null> {
    const doc = await this.bundles.findOne(tenantId, { _id: bundleKey(tenantId, bundleRef) }, { projection: { file_id: 1, size: 1 } });
    if (!doc) return null;
    return { size: doc.size, stream: this.bucket.openDownloadStream(doc.file_id as never) };
  }

  /** File paths in the bundle, or null when the tenant has no such bundle. */
  async entries(tenantId: string, bundleRef: string): Promise<string[] | null> {
    const doc = await this.bundles.findOne(tenantId, { _id: bundleKey(tenantId, bundleRef) }, { projection: { entries: 1 } });
    return doc?.entries ?? null;
  }
}
