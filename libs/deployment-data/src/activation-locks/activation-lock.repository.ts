import { Schema, type Connection, type Model } from 'mongoose';
import { ApiError, ensureCollectionAndIndexes, isDuplicateKeyError, modelFor } from '@envengine/service-kit';
import { TenantScopedModel } from '@envengine/tenant-data';

interface ActivationLockDocument {
  /** The environment id: one activation of an environment at a time. */
  _id: string;
  tenant_id: string;
  holder: string;
  acquired_at: Date;
  /** A holder that vanished (a terminated workflow) frees the lock after this. */
  expires_at: Date;
}

const lockSchema = new Schema<ActivationLockDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    holder: { type: String, required: true },
    acquired_at: { type: Date, required: true },
    expires_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'activation_locks' },
);
// An abandoned lock is taken over as soon as it expires; the TTL monitor only tidies up.
lockSchema.index({ expires_at: 1 }, { expireAfterSeconds: 60 });

/** The lock that serializes activations of one environment. */
export class ActivationLockRepository {
  private readonly model: Model<ActivationLockDocument>;
  private readonly locks: TenantScopedModel<ActivationLockDocument>;

  constructor(
    connection: Connection,
    private readonly leaseMs: number,
  ) {
    this.model = modelFor(connection, 'ActivationLock', lockSchema);
    this.locks = new TenantScopedModel(this.model);
  }

  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.model);
  }

  /**
   * Takes the lock for `holder` (again, if it has it) in one atomic upsert: it matches a
   * lock this holder has or one that expired, and inserts when there is none. While
   * another holder's live lock is there, the upsert's insert meets it: 409.
   */
  async acquire(tenantId: string, environmentId: string, holder: string): Promise<void> {
    const now = new Date();
    try {
      await this.locks.updateOne(
        tenantId,
        { _id: environmentId, $or: [{ holder }, { expires_at: { $lte: now } }] },
        { $set: { holder, acquired_at: now, expires_at: new Date(now.getTime() + this.leaseMs) } },
        { upsert: true },
      );
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
      throw new ApiError('activation_in_progress', 'Another activation of this environment is in progress.');
    }
  }

  async release(tenantId: string, environmentId: string, holder: string): Promise<void> {
    await this.locks.deleteOne(tenantId, { _id: environmentId, holder });
  }
}
