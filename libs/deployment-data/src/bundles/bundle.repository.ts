import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import mongoose, { Schema, type Connection } from 'mongoose';
import type { BundleLimits, DeploymentQuotas } from '@envengine/contracts';
import { isDuplicateKeyError, quotaExceeded } from '@envengine/service-kit';
import { inTransaction, TenantQuotas, TenantScopedModel } from '@envengine/tenant-data';
import { readBundle, storedBundleFiles, type BundleFile } from './bundle-reader.ts';

/** One bundle of one tenant: its GridFS file and what the archive holds. */
interface BundleDocument {
  /** `<tenant>/<bundle ref>`: a bundle belongs to the caller who uploaded it. */
  _id: string;
  tenant_id: string;
  bundle_ref: string;
  size: number;
  file_id: mongoose.Types.ObjectId;
  entries: string[];
  /** Each file's content hash (absent on bundles stored before uploads recorded them: read from the bytes once, then kept). */
  files?: BundleFile[];
  inserted_at: Date;
  /** Its upload, or the last time a deployment named it or a sweep found one naming it: kept for the retention after that. */
  referenced_at: Date;
}

const bundleSchema = new Schema<BundleDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    bundle_ref: { type: String, required: true },
    size: { type: Number, required: true },
    file_id: { type: Schema.Types.ObjectId, required: true },
    entries: { type: [String], required: true },
    files: { type: [{ _id: false, path: String, sha256: String }], default: undefined },
    inserted_at: { type: Date, required: true },
    referenced_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'bundles' },
);
// The stored-bytes quota: a tenant's sizes summed from the index alone.
bundleSchema.index({ tenant_id: 1, size: 1 });
// The sweep of bundles no deployment names: those not referenced since its cut-off.
bundleSchema.index({ referenced_at: 1 });

/** Whether a deployment of the tenant names the bundle (read in the sweep's transaction). */
export type BundleNamed = (tenantId: string, bundleRef: string, session: mongoose.ClientSession) => Promise<boolean>;

const bundleKey = (tenantId: string, ref: string) => `${tenantId}/${ref}`;

/** Content-addressed bundles in GridFS, scoped to the tenant that uploaded them. */
export class BundleRepository {
  private readonly bundles: TenantScopedModel<BundleDocument>;
  private readonly bucket: mongoose.mongo.GridFSBucket;
  /** The deployment scope's per-tenant quota documents (stored bundle bytes). */
  private readonly quotas: TenantQuotas;

  constructor(private readonly connection: Connection) {
    this.bundles = TenantScopedModel.of(connection, 'Bundle', bundleSchema);
    this.bucket = new mongoose.mongo.GridFSBucket(connection.db!, { bucketName: 'bundle_files' });
    this.quotas = new TenantQuotas(connection);
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([this.bundles.ensureIndexes(), this.quotas.ensureIndexes()]);
    // Bundles stored before references were kept count as referenced at their upload.
    const unmarked = await this.bundles.findAcrossTenants({ referenced_at: { $exists: false } }, { projection: { _id: 1, tenant_id: 1, inserted_at: 1 }, limit: 100_000 });
    for (const doc of unmarked) await this.bundles.updateOne(doc.tenant_id, { _id: doc._id }, { $set: { referenced_at: doc.inserted_at } });
  }

  /**
   * A deployment names the bundle: its retention starts again. In the deployment's
   * transaction, this write meets the sweep's delete of the same document, so the two
   * take turns: either the sweep then sees the deployment, or this finds no bundle
   * (false) and the ingest reports `bundle_not_found`.
   */
  async markReferenced(tenantId: string, bundleRef: string, session?: mongoose.ClientSession): Promise<boolean> {
    return (await this.bundles.updateOne(tenantId, { _id: bundleKey(tenantId, bundleRef) }, { $set: { referenced_at: new Date() } }, { session })).matched === 1;
  }

  /**
   * Removes up to `limit` bundles that were not referenced since `cutoff` and that no
   * deployment names (`named`, read in the same transaction as the delete), with their
   * files. One that a deployment does name is marked referenced, so it is not looked at
   * again for a retention. Oldest first, across tenants. Answers how many were looked at
   * (fewer than `limit`: none is left), removed, and the bytes they freed.
   */
  async removeUnreferenced(cutoff: Date, named: BundleNamed, limit = 100): Promise<{ looked: number; removed: number; bytes: number }> {
    const candidates = await this.bundles.findAcrossTenants({ referenced_at: { $lt: cutoff } }, { projection: { _id: 1, tenant_id: 1, bundle_ref: 1 }, sort: { referenced_at: 1 }, limit });
    let removed = 0;
    let bytes = 0;
    for (const candidate of candidates) {
      const { tenant_id: tenantId, bundle_ref: bundleRef } = candidate;
      const gone = await inTransaction(this.connection, async (session) => {
        if (await named(tenantId, bundleRef, session)) {
          await this.markReferenced(tenantId, bundleRef, session);
          return null;
        }
        return this.bundles.findOneAndDelete(tenantId, { _id: candidate._id, referenced_at: { $lt: cutoff } }, { session });
      });
      if (!gone) continue;
      // After the commit: a crash here leaves the file alone, never a bundle without its bytes.
      await this.bucket.delete(gone.file_id as never).catch((error: Error) => {
        if (!/File not found/i.test(error.message)) throw error;
      });
      removed += 1;
      bytes += gone.size;
    }
    return { looked: candidates.length, removed, bytes };
  }

  /** Bytes of every bundle the tenant has stored. */
  private async storedBytes(tenantId: string, session?: mongoose.ClientSession): Promise<number> {
    const [total] = await this.bundles.aggregate<{ bytes: number }>(tenantId, {}, [{ $group: { _id: null, bytes: { $sum: '$size' } } }], { session });
    return total?.bytes ?? 0;
  }

  /** The stored-bundle quota's limit and the tenant's use, for `GET /quotas`. */
  async quotaUse(tenantId: string): Promise<Pick<DeploymentQuotas, 'bundle_bytes'>> {
    const [limits, used] = await Promise.all([this.quotas.limits(tenantId), this.storedBytes(tenantId)]);
    return { bundle_bytes: { limit: limits.bundle_bytes, used } };
  }

  private bundleBytesExceeded(limit: number, used: number, adding: number) {
    return quotaExceeded('bundle_bytes', limit, `Your stored bundles take ${used} bytes; this one (${adding} bytes) would pass the quota.`);
  }

  /**
   * Stores an upload; the server hashes it itself. The same bytes again keep the first
   * copy (`created` false) and the new one is dropped.
   */
  async store(tenantId: string, upload: Readable, limits: BundleLimits): Promise<{ bundleRef: string; size: number; created: boolean }> {
    // The quota is checked once the bytes are read and hashed: the same bytes again are 200 even at the quota (a CI job re-uploads its bundle).
    const sink = this.bucket.openUploadStream(`upload-${randomBytes(8).toString('hex')}`, { metadata: { tenant_id: tenantId } });
    let read;
    try {
      read = await readBundle(upload, sink, limits);
    } catch (error) {
      await this.bucket.delete(sink.id).catch(() => undefined);
      throw error;
    }
    const bundleRef = `sha256:${read.sha256}`;
    const key = bundleKey(tenantId, bundleRef);
    try {
      // Behind the tenant's quota document: two uploads of the tenant take turns, so neither misses the other's bytes.
      const created = await this.quotas.admission(tenantId, async (session, quota) => {
        // The same bytes again take no more room, and start the bundle's retention again.
        if (await this.markReferenced(tenantId, bundleRef, session)) return false;
        const used = await this.storedBytes(tenantId, session);
        if (used + read.size > quota.bundle_bytes) throw this.bundleBytesExceeded(quota.bundle_bytes, used, read.size);
        const now = new Date();
        await this.bundles.insert(
          tenantId,
          { _id: key, bundle_ref: bundleRef, size: read.size, file_id: sink.id, entries: read.entries, files: read.files, inserted_at: now, referenced_at: now },
          { session },
        );
        return true;
      });
      if (!created) await this.bucket.delete(sink.id).catch(() => undefined);
      return { bundleRef, size: read.size, created };
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

  /**
   * Each file of the bundle by path, with the SHA-256 of its content; null when the tenant
   * has no such bundle. A bundle stored before uploads recorded them is read once and its
   * hashes kept.
   */
  async fileHashes(tenantId: string, bundleRef: string): Promise<Map<string, string> | null> {
    const key = bundleKey(tenantId, bundleRef);
    const doc = await this.bundles.findOne(tenantId, { _id: key }, { projection: { files: 1, file_id: 1 } });
    if (!doc) return null;
    let files = doc.files;
    if (files === undefined) {
      files = await storedBundleFiles(this.bucket.openDownloadStream(doc.file_id as never));
      await this.bundles.updateOne(tenantId, { _id: key, files: { $exists: false } }, { $set: { files } });
    }
    return new Map(files.map((file) => [file.path, file.sha256]));
  }

  /** File paths in the bundle, or null when the tenant has no such bundle. */
  async entries(tenantId: string, bundleRef: string): Promise<string[] | null> {
    const doc = await this.bundles.findOne(tenantId, { _id: bundleKey(tenantId, bundleRef) }, { projection: { entries: 1 } });
    return doc?.entries ?? null;
  }
}
