import { Schema, type Connection, type Model } from 'mongoose';
import { ApiError, ensureCollectionAndIndexes, isDuplicateKeyError, modelFor } from '@envengine/service-kit';

interface ActivationLockDocument {
  /** The environment id: one activation of an environment at a time. */
  _id: string;
  holder: string;
  acquired_at: Date;
  /** A holder that vanished (a terminated workflow) frees the lock after this. */
  expires_at: Date;
}

const lockSchema = new Schema<ActivationLockDocument>(
  {
    _id: { type: String, required: true },
    holder: { type: String, required: true },
    acquired_at: { type: Date, required: true },
    expires_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'activation_locks' },
);

/**
 * The lock that serializes activations of one environment. Taking it is an insert under
 * the environment's id, the one write every MongoDB-wire server makes atomic.
 */
export class ActivationLockRepository {
  private readonly model: Model<ActivationLockDocument>;

  constructor(
    connection: Connection,
    private readonly leaseMs: number,
  ) {
    this.model =
      modelFor(connection, 'ActivationLock', lockSchema);
  }

  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.model);
  }

  /** Takes the lock for `holder` (again, if it has it); 409 while another holds it. */
  async acquire(environmentId: string, holder: string): Promise<void> {
    const now = new Date();
    try {
      await this.model.collection.insertOne({
        _id: environmentId,
        holder,
        acquired_at: now,
        expires_at: new Date(now.getTime() + this.leaseMs),
      } as never);
      return;
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
    const current = await this.model.findOne({ _id: environmentId }).lean<ActivationLockDocument>();
    if (current?.holder === holder) return;
    if (current && current.expires_at.getTime() < now.getTime()) {
      await this.model.deleteOne({ _id: environmentId, holder: current.holder });
    }
    throw new ApiError('activation_in_progress', 'Another activation of this environment is in progress.');
  }

  async release(environmentId: string, holder: string): Promise<void> {
    const current = await this.model.findOne({ _id: environmentId }).lean<ActivationLockDocument>();
    if (current?.holder === holder) await this.model.deleteOne({ _id: environmentId, holder });
  }
}
