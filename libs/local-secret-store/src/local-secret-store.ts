import { Schema, type Connection, type Model } from 'mongoose';
import { ensureCollectionAndIndexes, isDuplicateKeyError, modelFor, TtlCache } from '@envengine/service-kit';
import { openValue, rewrapDataKey, sealValue, type SealedValue } from './envelope-crypto.ts';
import { KeyedSerializer } from './keyed-serializer.ts';
import type { MasterKeyring } from './master-keyring.ts';

/** The name a secret row carries when this store holds its value. */
export const LOCAL_BACKEND_NAME = 'local';

/** A sealed value as stored: ciphertext and its wrapped data key, nothing readable. */
interface SealedFields {
  secret_id: string;
  version: number;
  /** `<secret id>:<version>`: the associated data both encryptions are bound to. */
  record_id: string;
  ciphertext: Buffer;
  iv: Buffer;
  tag: Buffer;
  data_key: { ciphertext: Buffer; iv: Buffer; tag: Buffer; master_key_id: string };
  written_at: Date;
}

/** Every version ever written (`_id` = record id): the unique key hands out version numbers. */
interface VersionDocument extends SealedFields {
  _id: string;
}

/** The newest version of each secret (`_id` = secret id): what reads look up. */
interface CurrentDocument extends SealedFields {
  _id: string;
}

const sealedDefinition = {
  _id: { type: String, required: true },
  secret_id: { type: String, required: true },
  version: { type: Number, required: true },
  record_id: { type: String, required: true },
  ciphertext: { type: Buffer, required: true },
  iv: { type: Buffer, required: true },
  tag: { type: Buffer, required: true },
  data_key: {
    ciphertext: { type: Buffer, required: true },
    iv: { type: Buffer, required: true },
    tag: { type: Buffer, required: true },
    master_key_id: { type: String, required: true },
  },
  written_at: { type: Date, required: true },
};

const versionSchema = new Schema<VersionDocument>(sealedDefinition, { versionKey: false, collection: 'local_secret_versions' });
versionSchema.index({ secret_id: 1 });
versionSchema.index({ 'data_key.master_key_id': 1 });

const currentSchema = new Schema<CurrentDocument>(sealedDefinition, { versionKey: false, collection: 'local_secret_current' });
currentSchema.index({ 'data_key.master_key_id': 1 });

// The driver hands stored binary back as BSON Binary; crypto needs Buffers.
function bytes(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  const binary = value as { buffer: Uint8Array; position?: number };
  return Buffer.from(binary.buffer.subarray(0, binary.position ?? binary.buffer.length));
}

function sealedOf(doc: SealedFields): SealedValue {
  return {
    ciphertext: bytes(doc.ciphertext),
    iv: bytes(doc.iv),
    tag: bytes(doc.tag),
    wrappedKey: {
      ciphertext: bytes(doc.data_key.ciphertext),
      iv: bytes(doc.data_key.iv),
      tag: bytes(doc.data_key.tag),
      masterKeyId: doc.data_key.master_key_id,
    },
  };
}

function sealedFields(secretId: string, version: number, sealed: SealedValue, writtenAt: Date): SealedFields {
  return {
    secret_id: secretId,
    version,
    record_id: recordId(secretId, version),
    ciphertext: sealed.ciphertext,
    iv: sealed.iv,
    tag: sealed.tag,
    data_key: {
      ciphertext: sealed.wrappedKey.ciphertext,
      iv: sealed.wrappedKey.iv,
      tag: sealed.wrappedKey.tag,
      master_key_id: sealed.wrappedKey.masterKeyId,
    },
    written_at: writtenAt,
  };
}

const recordId = (secretId: string, version: number) => `${secretId}:${version}`;

export interface RewrapReport {
  /** Data keys now wrapped by the active master key. */
  rewrapped: number;
  /** Records that changed or vanished while being re-wrapped (a concurrent write or retirement). */
  skipped: number;
  /** Data keys still wrapped by another master key after the pass. */
  remaining: number;
}

/** A stored version, as the listing shows it: number and time, never the value. */
export interface StoredVersion {
  version: number;
  writtenAt: Date;
}

/**
 * The `local` backend's storage: envelope encryption with AES-256-GCM, a fresh data key
 * per secret version wrapped by the master key.
 *
 * Versions: every version is inserted under the unique key `<secret id>:<version>`, which
 * is what hands out numbers. An insert is the one write every MongoDB-wire server makes
 * atomic (FerretDB 1.x updates are read-modify-write), so concurrent writers never share
 * a number. The newest version is also kept under the secret's id, so a read is one
 * primary-key lookup in a collection of one document per secret, however long the history.
 */
export class LocalSecretStore {
  readonly name = LOCAL_BACKEND_NAME;
  private readonly versions: Model<VersionDocument>;
  private readonly current: Model<CurrentDocument>;
  // Where updates are not atomic, two writers of one secret could still leave the older
  // version as current; within this process they take turns.
  private readonly writers = new KeyedSerializer();
  /** Sealed current versions (never plaintext), reused for `readCacheTtlMs`. */
  private readonly currentCache: TtlCache<CurrentDocument | null>;

  constructor(
    connection: Connection,
    private readonly keyring: MasterKeyring,
    private readonly options: {
      readCacheTtlMs?: number;
      /** False on servers that apply filtered updates non-atomically (see `updatesAreAtomic`). */
      atomicUpdates?: boolean;
    } = {},
  ) {
    this.currentCache = new TtlCache({ ttlMs: options.readCacheTtlMs ?? 0, maxEntries: 50_000 });
    this.versions =
      modelFor(connection, 'LocalSecretVersion', versionSchema);
    this.current =
      modelFor(connection, 'LocalSecretCurrent', currentSchema);
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([ensureCollectionAndIndexes(this.versions), ensureCollectionAndIndexes(this.current)]);
  }

  /** Stores the value as the secret's next version and returns its number. */
  store(secretId: string, value: string): Promise<StoredVersion> {
    return this.writers.run(secretId, async () => {
      const latest = await this.loadCurrent(secretId);
      for (let version = (latest?.version ?? 0) + 1; ; version += 1) {
        const sealed = sealValue(value, recordId(secretId, version), this.keyring);
        const fields = sealedFields(secretId, version, sealed, new Date());
        try {
          await this.versions.collection.insertOne({ _id: fields.record_id, ...fields } as never);
        } catch (error) {
          // Another writer took this number: the next one is free or taken too.
          if (isDuplicateKeyError(error)) continue;
          throw error;
        }
        await this.makeCurrent(fields);
        this.currentCache.delete(secretId);
        return { version, writtenAt: fields.written_at };
      }
    });
  }

  /**
   * Replaces the current version unless a newer one is already there. Where updates are
   * atomic, the filter decides between processes; elsewhere writers of one secret already
   * take turns in this process, and a lone `_id` filter spares a scan of every document.
   */
  private async makeCurrent(fields: SealedFields): Promise<void> {
    const filter = this.options.atomicUpdates === false ? { _id: fields.secret_id } : { _id: fields.secret_id, version: { $lt: fields.version } };
    try {
      await this.current.collection.updateOne(filter as never, { $set: fields }, { upsert: true });
    } catch (error) {
      // The upsert met a current document with a newer version: it stays.
      if (!isDuplicateKeyError(error)) throw error;
    }
  }

  private loadCurrent(secretId: string): Promise<CurrentDocument | null> {
    return this.currentCache.get(secretId, () => this.current.findOne({ _id: secretId }).lean<CurrentDocument>());
  }

  /** The newest version and its value, or undefined when the secret has none. */
  async readLatest(secretId: string): Promise<{ version: number; value: string } | undefined> {
    const doc = await this.loadCurrent(secretId);
    if (!doc) return undefined;
    return { version: doc.version, value: openValue(sealedOf(doc), doc.record_id, this.keyring) };
  }

  /** The newest version's number and time, without opening it. */
  async describeLatest(secretId: string): Promise<StoredVersion | undefined> {
    const doc = await this.loadCurrent(secretId);
    return doc ? { version: doc.version, writtenAt: doc.written_at } : undefined;
  }

  /** Destroys every stored version; a second call finds nothing and destroys nothing. */
  async retire(secretId: string): Promise<{ destroyed: number }> {
    this.currentCache.delete(secretId);
    await this.current.deleteOne({ _id: secretId });
    const result = await this.versions.deleteMany({ secret_id: secretId });
    this.currentCache.delete(secretId);
    return { destroyed: result.deletedCount };
  }

  /**
   * Re-wraps every data key that another master key wrapped under the active one, a batch
   * at a time, while the service keeps serving: each update applies only if the record is
   * still the one that was read, so a concurrent write or retirement is never undone.
   */
  async rewrapAll(options: { batchSize?: number; onBatch?: (done: number) => void } = {}): Promise<RewrapReport> {
    const total: RewrapReport = { rewrapped: 0, skipped: 0, remaining: 0 };
    for (const model of [this.versions, this.current] as Model<SealedFields & { _id: string }>[]) {
      const report = await this.rewrapCollection(model, options.batchSize ?? 200, (done) => options.onBatch?.(total.rewrapped + done));
      total.rewrapped += report.rewrapped;
      total.skipped += report.skipped;
      total.remaining += report.remaining;
    }
    return total;
  }

  private async rewrapCollection(
    model: Model<SealedFields & { _id: string }>,
    batchSize: number,
    onBatch: (done: number) => void,
  ): Promise<RewrapReport> {
    const activeId = this.keyring.active.id;
    let rewrapped = 0;
    let skipped = 0;
    let afterId = '';
    for (;;) {
      const batch = await model
        .find({ 'data_key.master_key_id': { $ne: activeId }, _id: { $gt: afterId } })
        .sort({ _id: 1 })
        .limit(batchSize)
        .lean<Array<SealedFields & { _id: string }>>();
      if (batch.length === 0) break;
      for (const doc of batch) {
        const sealed = sealedOf(doc);
        const next = rewrapDataKey(sealed.wrappedKey, doc.record_id, this.keyring);
        const result = await model.collection.updateOne(
          { _id: doc._id, record_id: doc.record_id, 'data_key.iv': sealed.wrappedKey.iv } as never,
          {
            $set: {
              'data_key.ciphertext': next.ciphertext,
              'data_key.iv': next.iv,
              'data_key.tag': next.tag,
              'data_key.master_key_id': next.masterKeyId,
            },
          },
        );
        if (result.modifiedCount === 1) rewrapped += 1;
        else skipped += 1;
      }
      afterId = batch.at(-1)!._id;
      onBatch(rewrapped);
    }
    const remaining = await model.countDocuments({ 'data_key.master_key_id': { $ne: activeId } });
    return { rewrapped, skipped, remaining };
  }
}
