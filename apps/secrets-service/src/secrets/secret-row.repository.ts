import type { ClientSession, Connection } from 'mongoose';
import { newId } from '@envengine/resource-ids';
import { TenantScopedModel } from '@envengine/tenant-data';
import { secretRowSchema, type SecretRowDocument } from './secret-row.schema.ts';

/** Secret rows of one environment at a time; every query carries tenant and environment. */
export class SecretRowRepository {
  private readonly rows: TenantScopedModel<SecretRowDocument>;

  constructor(connection: Connection) {
    this.rows = TenantScopedModel.of(connection, 'SecretRow', secretRowSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.rows.ensureIndexes();
  }

  /**
   * Hands out the secret's next version (1 for a new secret) in one atomic update, inside
   * the caller's transaction: two writers of one secret conflict there, and the driver
   * runs the loser again, so versions are 1..N with no gaps and no duplicates.
   */
  async nextVersion(
    tenantId: string,
    environmentId: string,
    name: string,
    backend: string,
    at: Date,
    session: ClientSession,
  ): Promise<SecretRowDocument> {
    const row = await this.rows.findOneAndUpdate(
      tenantId,
      { environment_id: environmentId, name },
      {
        $inc: { version: 1 },
        $set: { rotated_at: at },
        $setOnInsert: { _id: newId('sec'), backend, created_at: at },
      },
      { upsert: true, session },
    );
    return row!;
  }

  /** Whether the environment has a secret of that name, inside the caller's transaction. */
  async exists(tenantId: string, environmentId: string, name: string, session: ClientSession): Promise<boolean> {
    return (await this.rows.findOne(tenantId, { environment_id: environmentId, name }, { projection: { _id: 1 }, session })) !== null;
  }

  /** The environment's secrets, counted up to `limit`, inside the caller's transaction. */
  countInEnvironment(tenantId: string, environmentId: string, limit: number, session: ClientSession): Promise<number> {
    return this.rows.count(tenantId, { environment_id: environmentId }, { session, limit });
  }

  /** The tenant's secrets by environment id. */
  async countsByEnvironment(tenantId: string): Promise<Record<string, number>> {
    const rows = await this.rows.aggregate<{ _id: string; count: number }>(tenantId, {}, [{ $group: { _id: '$environment_id', count: { $sum: 1 } } }]);
    return Object.fromEntries(rows.map((row) => [row._id, row.count]));
  }

  list(tenantId: string, environmentId: string): Promise<SecretRowDocument[]> {
    return this.rows.find(tenantId, { environment_id: environmentId }, { sort: { name: 1 } });
  }

  /** The rows of the named secrets that exist, by name. */
  async findByNames(tenantId: string, environmentId: string, names: readonly string[]): Promise<Map<string, SecretRowDocument>> {
    if (names.length === 0) return new Map();
    const docs = await this.rows.find(tenantId, { environment_id: environmentId, name: { $in: [...new Set(names)] } });
    return new Map(docs.map((doc) => [doc.name, doc]));
  }

  /** Removes the row and returns it, inside the caller's transaction; null when there is none. */
  removeByName(tenantId: string, environmentId: string, name: string, session: ClientSession): Promise<SecretRowDocument | null> {
    return this.rows.findOneAndDelete(tenantId, { environment_id: environmentId, name }, { session });
  }
}
