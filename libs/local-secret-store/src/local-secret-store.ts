import { Schema, type ClientSession, type Connection, type Model } from 'mongoose';
import { ensureCollectionAndIndexes, modelFor } from '@envengine/service-kit';
import { TenantScopedModel } from '@envengine/tenant-data';
import { openValue, rewrapDataKey, sealValue, type MasterKeyring, type SealedValue } from '@envengine/sealed-values';

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

/** Every version ever written, under `<secret id>:<version>`; the secret's row says which is current. */
interface VersionDocument extends SealedFields {
  _id: string;
  tenant_id: string;
}

const versionSchema = new Schema<VersionDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    secret_id: { type: String, required: true },
    version: { type: Number, required: true },
    record_id: { type: String, required: true },
    // An empty value seals to an empty ciphertext, which `required` would refuse.
    ciphertext: { type: Buffer, default: () => Buffer.alloc(0) },
    iv: { type: Buffer, required: true },
    tag: { type: Buffer, required: true },
    data_key: {
      ciphertext: { type: Buffer, required: true },
      iv: { type: Buffer, required: true },
      tag: { type: Buffer, required: true },
      master_key_id: { type: String, required: true },
    },
    written_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'local_secret_versions' },
);
versionSchema.index({ tenant_id: 1, secret_id: 1 });
versionSchema.index({ 'data_key.master_key_id': 1, _id: 1 });

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
  /** Records that changed or vanished while being re-wrapped (a concurrent retirement). */
  skipped: number;
  /** Data keys still wrapped by another master key after the pass. */
  remaining: number;
}

/**
 * The `local` backend's storage: envelope encryption with AES-256-GCM, a fresh data key
 * per secret version wrapped by the master key. It lives in the secrets-service's own
 * database, so its writes join the transaction that moves the secret's row: a version and
 * the row naming it as current are written together or not at all.
 */
export class LocalSecretStore {
  readonly name = LOCAL_BACKEND_NAME;
  private readonly versions: TenantScopedModel<VersionDocument>;
  /** Every tenant's versions at once: only for re-wrapping under a new master key, an operator's job. */
  private readonly allTenantsVersions: Model<VersionDocument>;

  constructor(
    connection: Connection,
    private readonly keyring: MasterKeyring,
  ) {
    this.allTenantsVersions = modelFor(connection, 'LocalSecretVersion', versionSchema);
    this.versions = new TenantScopedModel(this.allTenantsVersions);
  }

  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.allTenantsVersions);
  }

  /** Seals the value as version `version` of the secret, inside the caller's transaction. */
  async store(tenantId: string, secretId: string, version: number, value: string, writtenAt: Date, session: ClientSession): Promise<void> {
    const sealed = sealValue(value, recordId(secretId, version), this.keyring);
    const fields = sealedFields(secretId, version, sealed, writtenAt);
    await this.versions.insert(tenantId, { _id: fields.record_id, ...fields }, { session });
  }

  /** The values of the given versions, by secret id; a version that is not stored is left out. */
  async readVersions(tenantId: string, wanted: ReadonlyArray<{ secretId: string; version: number }>): Promise<Map<string, string>> {
    if (wanted.length === 0) return new Map();
    const docs = await this.versions.find(tenantId, { _id: { $in: wanted.map((item) => recordId(item.secretId, item.version)) } });
    return new Map(docs.map((doc) => [doc.secret_id, openValue(sealedOf(doc), doc.record_id, this.keyring)]));
  }

  /** Destroys every stored version of the secret, inside the caller's transaction. */
  async retire(tenantId: string, secretId: string, session: ClientSession): Promise<{ destroyed: number }> {
    return { destroyed: await this.versions.deleteMany(tenantId, { secret_id: secretId }, { session }) };
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
      const batch = await this.allTenantsVersions
        .find({ 'data_key.master_key_id': { $ne: activeId }, _id: { $gt: afterId } })
        .sort({ _id: 1 })
        .limit(batchSize)
        .lean<VersionDocument[]>();
      if (batch.length === 0) break;
      for (const doc of batch) {
        const sealed = sealedOf(doc);
        const next = rewrapDataKey(sealed.wrappedKey, doc.record_id, this.keyring);
        const result = await this.versions.updateOne(
          doc.tenant_id,
          { _id: doc._id, record_id: doc.record_id, 'data_key.iv': sealed.wrappedKey.iv },
          {
            $set: {
              'data_key.ciphertext': next.ciphertext,
              'data_key.iv': next.iv,
              'data_key.tag': next.tag,
              'data_key.master_key_id': next.masterKeyId,
            },
          },
        );
        if (result.modified === 1) rewrapped += 1;
        else skipped += 1;
      }
      afterId = batch.at(-1)!._id;
      options.onBatch?.(rewrapped);
    }
    const remaining = await this.allTenantsVersions.countDocuments({ 'data_key.master_key_id': { $ne: activeId } });
    return { rewrapped, skipped, remaining };
  }
}
