import { Schema, type Connection, type Model } from 'mongoose';
import { ensureCollectionAndIndexes, isDuplicateKeyError } from '@envengine/service-kit';
import { openValue, rewrapDataKey, sealValue, type SealedValue } from './envelope-crypto.ts';
import type { MasterKeyring } from './master-keyring.ts';

/** The name a secret row carries when this store holds its value. */
export const LOCAL_BACKEND_NAME = 'local';

/** One version of one secret: ciphertext and its wrapped data key, nothing readable. */
interface SecretVersionDocument {
  /** `<secret id>:<version>`; also the associated data of both encryptions. */
  _id: string;
  secret_id: string;
  version: number;
  ciphertext: Buffer;
  iv: Buffer;
  tag: Buffer;
  data_key: { ciphertext: Buffer; iv: Buffer; tag: Buffer; master_key_id: string };
  created_at: Date;
}

const secretVersionSchema = new Schema<SecretVersionDocument>(
  {
    _id: { type: String, required: true },
    secret_id: { type: String, required: true },
    version: { type: Number, required: true },
    ciphertext: { type: Buffer, required: true },
    iv: { type: Buffer, required: true },
    tag: { type: Buffer, required: true },
    data_key: {
      ciphertext: { type: Buffer, required: true },
      iv: { type: Buffer, required: true },
      tag: { type: Buffer, required: true },
      master_key_id: { type: String, required: true },
    },
    created_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'local_secret_versions' },
);
secretVersionSchema.index({ secret_id: 1 });
secretVersionSchema.index({ 'data_key.master_key_id': 1 });

// The driver hands stored binary back as BSON Binary; crypto needs Buffers.
function bytes(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  const binary = value as { buffer: Uint8Array; position?: number };
  return Buffer.from(binary.buffer.subarray(0, binary.position ?? binary.buffer.length));
}

function sealedOf(doc: SecretVersionDocument): SealedValue {
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
 * per secret version wrapped by the master key. Each version is one document keyed by
 * `<secret id>:<version>`. The unique key is what hands out version numbers: an insert is
 * the one write a MongoDB-wire server makes atomic everywhere (FerretDB's updates are
 * read-modify-write), so concurrent writers can never take the same number.
 */
export class LocalSecretStore {
  readonly name = LOCAL_BACKEND_NAME;
  private readonly model: Model<SecretVersionDocument>;

  constructor(
    connection: Connection,
    private readonly keyring: MasterKeyring,
  ) {
    this.model =
      (connection.models.LocalSecretVersion as Model<SecretVersionDocument> | undefined) ??
      connection.model<SecretVersionDocument>('LocalSecretVersion', secretVersionSchema);
  }

  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.model);
  }

  /** Stores the value as the first free version from `fromVersion` on, and returns its number. */
  async store(secretId: string, fromVersion: number, value: string): Promise<{ version: number; writtenAt: Date }> {
    for (let version = Math.max(1, fromVersion); ; version += 1) {
      const id = recordId(secretId, version);
      const sealed = sealValue(value, id, this.keyring);
      const writtenAt = new Date();
      try {
        await this.model.collection.insertOne({
          _id: id,
          secret_id: secretId,
          version,
          ciphertext: sealed.ciphertext,
          iv: sealed.iv,
          tag: sealed.tag,
          data_key: {
            ciphertext: sealed.wrappedKey.ciphertext,
            iv: sealed.wrappedKey.iv,
            tag: sealed.wrappedKey.tag,
            master_key_id: sealed.wrappedKey.masterKeyId,
          },
          created_at: writtenAt,
        } as never);
        return { version, writtenAt };
      } catch (error) {
        // Another writer took this number: the next one is free or taken too.
        if (!isDuplicateKeyError(error)) throw error;
      }
    }
  }

  /** The newest version and its value; `hint` is a version known to be stored (the row's). */
  async readLatest(secretId: string, hint: number): Promise<{ version: number; value: string } | undefined> {
    const doc = await this.findLatest(secretId, hint, {});
    return doc ? { version: doc.version, value: openValue(sealedOf(doc), doc._id, this.keyring) } : undefined;
  }

  /** The newest version's number and time, without opening it. */
  async describeLatest(secretId: string, hint: number): Promise<StoredVersion | undefined> {
    const doc = await this.findLatest(secretId, hint, { version: 1, created_at: 1 });
    return doc ? { version: doc.version, writtenAt: doc.created_at } : undefined;
  }

  /**
   * Looks at the hinted version and the one after it together (one round trip); newer
   * versions than the hint exist only while writes race, so the walk is short.
   */
  private async findLatest(secretId: string, hint: number, projection: Record<string, 1>): Promise<SecretVersionDocument | undefined> {
    const get = (version: number) =>
      version < 1 ? Promise.resolve(null) : this.model.findOne({ _id: recordId(secretId, version) }, projection).lean<SecretVersionDocument>();
    let version = Math.max(1, hint);
    let [current, next] = await Promise.all([get(version), get(version + 1)]);
    while (next) {
      version += 1;
      current = next;
      next = await get(version + 1);
    }
    // The hint itself missing means it was retired meanwhile: nothing to read.
    return current ?? undefined;
  }

  /** Destroys every stored version; a second call finds nothing and destroys nothing. */
  async retire(secretId: string): Promise<{ destroyed: number }> {
    const result = await this.model.deleteMany({ secret_id: secretId });
    return { destroyed: result.deletedCount };
  }

  /**
   * Re-wraps every data key that another master key wrapped under the active one, a batch
   * at a time, while the service keeps serving: each update applies only if the record is
   * still the one that was read, so a concurrent retirement is never undone.
   */
  async rewrapAll(options: { batchSize?: number; onBatch?: (done: number) => void } = {}): Promise<RewrapReport> {
    const activeId = this.keyring.active.id;
    const batchSize = options.batchSize ?? 200;
    let rewrapped = 0;
    let skipped = 0;
    let afterId = '';
    for (;;) {
      const batch = await this.model
        .find({ 'data_key.master_key_id': { $ne: activeId }, _id: { $gt: afterId } })
        .sort({ _id: 1 })
        .limit(batchSize)
        .lean<SecretVersionDocument[]>();
      if (batch.length === 0) break;
      for (const doc of batch) {
        const sealed = sealedOf(doc);
        const next = rewrapDataKey(sealed.wrappedKey, doc._id, this.keyring);
        const result = await this.model.collection.updateOne(
          { _id: doc._id, 'data_key.master_key_id': doc.data_key.master_key_id, 'data_key.iv': sealed.wrappedKey.iv } as never,
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
      options.onBatch?.(rewrapped);
    }
    const remaining = await this.model.countDocuments({ 'data_key.master_key_id': { $ne: activeId } });
    return { rewrapped, skipped, remaining };
  }
}
