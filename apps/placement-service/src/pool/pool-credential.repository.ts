import { Schema, type Connection } from 'mongoose';
import type { EventCause, EventOutbox } from '@envengine/event-log';
import type { QuotaLimits } from '@envengine/contracts';
import { quotaExceeded } from '@envengine/service-kit';
import { inTransaction, TenantScopedModel, type TenantQuotas } from '@envengine/tenant-data';

export interface PoolCredentialDocument {
  _id: string;
  tenant_id: string;
  label: string | null;
  /** SHA-256 of the pool token; the token itself is shown once. */
  token_hash: string;
  redis_username: string;
  /** SHA-256 of the Redis password, which is how the ACL user is (re)created (`#<hash>`). */
  redis_password_sha256: string;
  created_at: Date;
  revoked_at: Date | null;
  /** When its keys to the engine's store were taken away after its revocation; null until then (a sweep retries). */
  store_keys_retired_at?: Date | null;
}

const poolCredentialSchema = new Schema<PoolCredentialDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    label: { type: String, default: null },
    token_hash: { type: String, required: true },
    redis_username: { type: String, required: true },
    redis_password_sha256: { type: String, required: true },
    created_at: { type: Date, required: true },
    revoked_at: { type: Date, default: null },
    store_keys_retired_at: { type: Date, default: null },
  },
  { versionKey: false, collection: 'pool_credentials' },
);
poolCredentialSchema.index({ token_hash: 1 }, { unique: true });
poolCredentialSchema.index({ tenant_id: 1, revoked_at: 1, _id: 1 });
poolCredentialSchema.index({ revoked_at: 1 });
// Revoked credentials whose store keys are still to be taken away.
poolCredentialSchema.index({ store_keys_retired_at: 1, revoked_at: 1 });

/** The credentials of each tenant's worker pool (hashes only). */
export class PoolCredentialRepository {
  private readonly credentials: TenantScopedModel<PoolCredentialDocument>;

  constructor(
    private readonly connection: Connection,
    private readonly quotas: TenantQuotas,
    private readonly outbox: EventOutbox,
  ) {
    this.credentials = TenantScopedModel.of(connection, 'PoolCredential', poolCredentialSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.credentials.ensureIndexes();
  }

  /** Stores a new credential within the tenant's `pool_credentials` quota (its live ones), with its event, in one transaction. */
  insert(tenantId: string, doc: Omit<PoolCredentialDocument, 'tenant_id'>, cause: EventCause): Promise<PoolCredentialDocument> {
    return this.quotas.admission(tenantId, async (session, limits: QuotaLimits) => {
      const held = await this.credentials.count(tenantId, { revoked_at: null }, { session, limit: limits.pool_credentials });
      if (held >= limits.pool_credentials) throw quotaExceeded('pool_credentials', limits.pool_credentials, `You have ${held} live pool credentials already; revoke one first.`);
      const stored = await this.credentials.insert(tenantId, doc, { session });
      await this.outbox.record(tenantId, { type: 'pool_credential.created', environment: null, subject: { kind: 'pool_credential', id: doc._id }, cause, data: { label: doc.label } }, session);
      return stored;
    });
  }

  /** Live credentials (not revoked): what the `pool_credentials` quota counts. */
  countActive(tenantId: string): Promise<number> {
    return this.credentials.count(tenantId, { revoked_at: null });
  }

  active(tenantId: string): Promise<PoolCredentialDocument[]> {
    return this.credentials.find(tenantId, { revoked_at: null }, { sort: { _id: 1 } });
  }

  /** Every live credential of every tenant: their Redis ACL users are re-created after a Redis restart. */
  allActive(): Promise<PoolCredentialDocument[]> {
    return this.credentials.findAcrossTenants({ revoked_at: null });
  }

  /** The owner of a live pool token: the gateway asks before it knows the tenant. */
  async ownerOfToken(tokenHash: string): Promise<PoolCredentialDocument | undefined> {
    const [doc] = await this.credentials.findAcrossTenants({ token_hash: tokenHash, revoked_at: null }, { limit: 1 });
    return doc;
  }

  async isLive(tenantId: string, id: string): Promise<boolean> {
    return (await this.credentials.findOne(tenantId, { _id: id, revoked_at: null }, { projection: { _id: 1 } })) !== null;
  }

  /** Revoked credentials, of every tenant, whose keys to the engine's store may still be out. */
  withStoreKeysOutstanding(limit: number): Promise<PoolCredentialDocument[]> {
    return this.credentials.findAcrossTenants({ store_keys_retired_at: null, revoked_at: { $ne: null } }, { projection: { _id: 1, tenant_id: 1 }, limit });
  }

  async markStoreKeysRetired(tenantId: string, id: string): Promise<void> {
    await this.credentials.updateOne(tenantId, { _id: id }, { $set: { store_keys_retired_at: new Date() } });
  }

  /** Marks the credential revoked once; undefined when the tenant has no live one of that id. */
  async revoke(tenantId: string, id: string, cause: EventCause): Promise<PoolCredentialDocument | undefined> {
    return inTransaction(this.connection, async (session) => {
      const revoked = await this.credentials.findOneAndUpdate(tenantId, { _id: id, revoked_at: null }, { $set: { revoked_at: new Date() } }, { session });
      if (!revoked) return undefined;
      await this.outbox.record(tenantId, { type: 'pool_credential.revoked', environment: null, subject: { kind: 'pool_credential', id }, cause, data: { label: revoked.label } }, session);
      return revoked;
    });
  }
}
