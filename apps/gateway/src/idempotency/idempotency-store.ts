import { Schema, type Connection } from 'mongoose';
import { isDuplicateKeyError } from '@envengine/service-kit';
import { TenantScopedModel } from '@envengine/tenant-data';

/** A response kept for replay: status, content type and the body as sent. */
export interface StoredResponse {
  status: number;
  contentType: string | undefined;
  body: string;
}

interface IdempotencyRecordDocument {
  _id: string;
  tenant_id: string;
  fingerprint: string;
  state: 'in_progress' | 'done';
  response: StoredResponse | null;
  /** An in-progress claim older than this was abandoned (a gateway died mid-request). */
  claim_expires_at: Date;
  expires_at: Date;
}

export type ClaimResult =
  | { outcome: 'claimed' }
  | { outcome: 'replay'; response: StoredResponse }
  | { outcome: 'mismatch' }
  | { outcome: 'in_progress' };

const recordSchema = new Schema<IdempotencyRecordDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    fingerprint: { type: String, required: true },
    state: { type: String, required: true },
    response: { type: Schema.Types.Mixed, default: null },
    claim_expires_at: { type: Date, required: true },
    expires_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'idempotency_keys' },
);
// MongoDB's TTL monitor removes a key once its retention has passed (within a minute or so).
recordSchema.index({ expires_at: 1 }, { expireAfterSeconds: 0 });

/**
 * Idempotency keys per tenant, in the gateway's database. A key is claimed before the
 * request is forwarded and completed with the response; a repeat replays it.
 */
export class IdempotencyStore {
  private readonly records: TenantScopedModel<IdempotencyRecordDocument>;

  constructor(
    connection: Connection,
    private readonly retentionMs: number,
    private readonly claimMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.records = TenantScopedModel.of(connection, 'IdempotencyRecord', recordSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.records.ensureIndexes();
  }

  async claim(tenantId: string, key: string, fingerprint: string): Promise<ClaimResult> {
    const id = `${tenantId}:${key}`;
    const now = this.now();
    const fresh: Omit<IdempotencyRecordDocument, 'tenant_id'> = {
      _id: id,
      fingerprint,
      state: 'in_progress',
      response: null,
      claim_expires_at: new Date(now + this.claimMs),
      expires_at: new Date(now + this.retentionMs),
    };
    try {
      await this.records.insert(tenantId, fresh);
      return { outcome: 'claimed' };
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
    const existing = await this.records.findOne(tenantId, { _id: id });
    if (!existing) return this.claim(tenantId, key, fingerprint);
    // Expired records may outlive their time until the TTL monitor removes them.
    const expired = existing.expires_at.getTime() <= now;
    const abandoned = existing.state === 'in_progress' && existing.claim_expires_at.getTime() <= now;
    if (expired || abandoned) {
      // Taken over only if it is still the record read above: one of two racers wins.
      const taken = await this.records.findOneAndUpdate(
        tenantId,
        { _id: id, state: existing.state, claim_expires_at: existing.claim_expires_at },
        { $set: fresh },
      );
      return taken ? { outcome: 'claimed' } : this.claim(tenantId, key, fingerprint);
    }
    if (existing.fingerprint !== fingerprint) return { outcome: 'mismatch' };
    if (existing.state === 'done' && existing.response) return { outcome: 'replay', response: existing.response };
    return { outcome: 'in_progress' };
  }

  async complete(tenantId: string, key: string, response: StoredResponse): Promise<void> {
    await this.records.updateOne(tenantId, { _id: `${tenantId}:${key}`, state: 'in_progress' }, { $set: { state: 'done', response } });
  }

  /** Gives the key back, so that a retry runs the request again (after a 5xx). */
  async release(tenantId: string, key: string): Promise<void> {
    await this.records.deleteOne(tenantId, { _id: `${tenantId}:${key}`, state: 'in_progress' });
  }
}
