import type { Connection, Model } from 'mongoose';
import { newId } from '@envengine/resource-ids';
import { ensureCollectionAndIndexes, isDuplicateKeyError } from '@envengine/service-kit';
import { secretRowSchema, type SecretRowDocument } from './secret-row.schema.ts';

export type PublishOutcome = 'published' | 'superseded' | 'gone';

const live = { retiring_at: null, version: { $gt: 0 } };

/** Secret rows of one environment at a time; every query carries tenant and environment. */
export class SecretRowRepository {
  private readonly model: Model<SecretRowDocument>;

  constructor(connection: Connection) {
    this.model =
      (connection.models.SecretRow as Model<SecretRowDocument> | undefined) ??
      connection.model<SecretRowDocument>('SecretRow', secretRowSchema);
  }

  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.model);
  }

  /** The row of that name, created (with version 0) when there is none. */
  async claim(tenantId: string, environmentId: string, name: string, backend: string): Promise<SecretRowDocument> {
    const filter = { tenant_id: tenantId, environment_id: environmentId, name };
    const insert = () =>
      this.model
        .findOneAndUpdate(
          filter,
          {
            $setOnInsert: {
              _id: newId('sec'),
              backend,
              version: 0,
              created_at: new Date(),
              rotated_at: null,
              retiring_at: null,
            },
          },
          { upsert: true, returnDocument: 'after' },
        )
        .lean<SecretRowDocument>();
    try {
      return (await insert())!;
    } catch (error) {
      // Two first writes at once: one insert wins, the other finds its row.
      if (!isDuplicateKeyError(error)) throw error;
      return (await insert())!;
    }
  }

  /**
   * Makes `version` the row's current one, unless a newer version is already published
   * (writes may finish out of order) or the secret was deleted meanwhile.
   */
  async publish(id: string, version: number, at: Date): Promise<PublishOutcome> {
    const result = await this.model.updateOne(
      { _id: id, retiring_at: null, version: { $lt: version } },
      { $set: { version, rotated_at: at } },
    );
    if (result.matchedCount === 1) return 'published';
    const row = await this.model.findOne({ _id: id, retiring_at: null }, { _id: 1 }).lean();
    return row ? 'superseded' : 'gone';
  }

  async list(tenantId: string, environmentId: string): Promise<SecretRowDocument[]> {
    return this.model
      .find({ tenant_id: tenantId, environment_id: environmentId, ...live })
      .sort({ name: 1 })
      .lean<SecretRowDocument[]>();
  }

  /** The row, including one whose deletion was interrupted (so that a retry can finish it). */
  async find(tenantId: string, environmentId: string, name: string): Promise<SecretRowDocument | undefined> {
    const doc = await this.model.findOne({ tenant_id: tenantId, environment_id: environmentId, name }).lean<SecretRowDocument>();
    return doc ?? undefined;
  }

  /** Rows that exist for readers, by name. */
  async findLive(tenantId: string, environmentId: string, names: readonly string[]): Promise<Map<string, SecretRowDocument>> {
    if (names.length === 0) return new Map();
    const docs = await this.model
      .find({ tenant_id: tenantId, environment_id: environmentId, name: { $in: [...new Set(names)] }, ...live })
      .lean<SecretRowDocument[]>();
    return new Map(docs.map((doc) => [doc.name, doc]));
  }

  async markRetiring(id: string): Promise<void> {
    await this.model.updateOne({ _id: id, retiring_at: null }, { $set: { retiring_at: new Date() } });
  }

  async remove(id: string): Promise<void> {
    await this.model.deleteOne({ _id: id });
  }
}
