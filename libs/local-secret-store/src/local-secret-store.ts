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
secretVersionSchema.index({ secret_id: 1, version: -1 });
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

/**
 * The `local` backend's storage: envelope encryption with AES-256-GCM, a fresh data key
 * per secret version wrapped by the master key. Versions of a secret go 1..N; the unique
 * `_id` per (secret, version) is what keeps concurrent writers from taking one number.
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

  /** Stores the next version of a secret and returns its number. */
  async write(secretId: string, value: string): Promise<{ version: number }> {
    for (;;) {
      const latest = await this.latestVersion(secretId);
      const version = latest + 1;
      const id = recordId(secretId, version);
      const sealed = sealValue(value, id, this.keyring);
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
          created_at: new Date(),
        } as never);
        return { version };
      } catch (error) {
        // Another writer took this number first: take the next one.
        if (!isDuplicateKeyError(error)) throw error;
      }
    }
  }

  /** The newest version and its value, or undefined when the secret has none (retired). */
  async readLatest(secretId: string): Promise<{ version: number; value: string } | undefined> {
    const doc = await this.model
      .findOne({ secret_id: secretId })
      .sort({ version: -1 })
      .lean<SecretVersionDocument>();
    if (!doc) return undefined;
    return { version: doc.version, value: openValue(sealedOf(doc), doc._id, this.keyring) };
  }

  /** Destroys every stored version; a second call finds nothing and destroys nothing. */
  async retire(secretId: string): Promise<{ destroyed: number }> {
    const result = await this.model.deleteMany({ secret_id: secretId });
    return { destroyed: result.deletedCount };
  }

  async versionCount(secretId: string): Promise<number> {
    return this.model.countDocuments({ secret_id: secretId });
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

  private async latestVersion(secretId: string): Promise<number> {
    const doc = await this.model
      .findOne({ secret_id: secretId }, { version: 1 })
      .sort({ version: -1 })
      .lean<Pick<SecretVersionDocument, 'version'>>();
    return doc?.version ?? 0;
  }
}
