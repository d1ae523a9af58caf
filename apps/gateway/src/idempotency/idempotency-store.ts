import { Schema, type Connection, type Model } from 'mongoose';
import { ensureCollectionAndIndexes, isDuplicateKeyError } from '@envengine/service-kit';

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
recordSchema.index({ expires_at: 1 }, { expireAfterSeconds: 0 });

/**
 * Idempotency keys per tenant, in the gateway's database. A key is claimed before the
 * request is forwarded and completed with the response; a repeat replays it.
 */
export class IdempotencyStore {
  private readonly model: Model<IdempotencyRecordDocument>;

  constructor(
    connection: Connection,
    private readonly retentionMs: number,
    private readonly claimMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.model =
      connection.models.IdempotencyRecord ??
      connection.model<IdempotencyRecordDocument>('IdempotencyRecord', recordSchema);
  }

  private sweepTimer: NodeJS.Timeout | undefined;
  private ttlIndexRefused = false;

  async ensureIndexes(): Promise<void> {
    try {
      await ensureCollectionAndIndexes(this.model);
    } catch (error) {
      // FerretDB 1.x has no TTL indexes (NotImplemented); expired keys are then swept.
      if ((error as { code?: unknown }).code !== 238) throw error;
      this.ttlIndexRefused = true;
    }
  }

  /** Removes expired keys every `intervalMs` when the server cannot do it with a TTL index. */
  startExpirySweep(intervalMs: number, onError: (error: Error) => void): void {
    if (!this.ttlIndexRefused || this.sweepTimer) return;
    this.sweepTimer = setInterval(() => {
      this.model.deleteMany({ expires_at: { $lte: new Date(this.now()) } }).catch(onError);
    }, intervalMs);
    this.sweepTimer.unref();
  }

  stopExpirySweep(): void {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  async claim(tenantId: string, key: string, fingerprint: string): Promise<ClaimResult> {
    const id = `${tenantId}:${key}`;
    const now = this.now();
    const fresh: IdempotencyRecordDocument = {
      _id: id,
      tenant_id: tenantId,
      fingerprint,
      state: 'in_progress',
      response: null,
      claim_expires_at: new Date(now + this.claimMs),
      expires_at: new Date(now + this.retentionMs),
    };
    try {
      await this.model.collection.insertOne(fresh as never);
      return { outcome: 'claimed' };
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
    const existing = await this.model.findOne({ _id: id }).lean<IdempotencyRecordDocument>();
    if (!existing) return this.claim(tenantId, key, fingerprint);
    // Expired records may outlive their time until the TTL monitor removes them.
    const expired = existing.expires_at.getTime() <= now;
    const abandoned = existing.state === 'in_progress' && existing.claim_expires_at.getTime() <= now;
    if (expired || abandoned) {
      const taken = await this.model.findOneAndReplace(
        { _id: id, state: existing.state, claim_expires_at: existing.claim_expires_at },
        fresh,
      );
      return taken ? { outcome: 'claimed' } : this.claim(tenantId, key, fingerprint);
    }
    if (existing.fingerprint !== fingerprint) return { outcome: 'mismatch' };
    if (existing.state === 'done' && existing.response) return { outcome: 'replay', response: existing.response };
    return { outcome: 'in_progress' };
  }

  async complete(tenantId: string, key: string, response: StoredResponse): Promise<void> {
    await this.model.updateOne({ _id: `${tenantId}:${key}` }, { $set: { state: 'done', response } });
  }

  /** Gives the key back, so that a retry runs the request again (after a 5xx). */
  async release(tenantId: string, key: string): Promise<void> {
    await this.model.deleteOne({ _id: `${tenantId}:${key}`, state: 'in_progress' });
  }
}
