import type { Connection, Model } from 'mongoose';
import { newId } from '@envengine/resource-ids';
import { ensureCollectionAndIndexes, isDuplicateKeyError } from '@envengine/service-kit';
import { secretKey, secretRowSchema, type SecretRowDocument } from './secret-row.schema.ts';

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

  /** The secret's row, created when there is none. */
  async findOrCreate(tenantId: string, environmentId: string, name: string, backend: string): Promise<SecretRowDocument> {
    const key = secretKey(tenantId, environmentId, name);
    for (;;) {
      const existing = await this.model.findOne({ _id: key }).lean<SecretRowDocument>();
      if (existing) return existing;
      const row: SecretRowDocument = {
        _id: key,
        secret_id: newId('sec'),
        tenant_id: tenantId,
        environment_id: environmentId,
        name,
        backend,
        created_at: new Date(),
        retiring_at: null,
      };
      try {
        await this.model.collection.insertOne(row as never);
        return row;
      } catch (error) {
        // A concurrent first write created it: read that one.
        if (!isDuplicateKeyError(error)) throw error;
      }
    }
  }

  /** Whether this incarnation of the secret still exists for readers. */
  async isLive(row: Pick<SecretRowDocument, '_id' | 'secret_id'>): Promise<boolean> {
    // Read by primary key alone and compared here: FerretDB answers only that from an index.
    const current = await this.model.findOne({ _id: row._id }, { secret_id: 1, retiring_at: 1 }).lean<SecretRowDocument>();
    return current?.secret_id === row.secret_id && !current.retiring_at;
  }

  async list(tenantId: string, environmentId: string): Promise<SecretRowDocument[]> {
    return this.model
      .find({ tenant_id: tenantId, environment_id: environmentId, retiring_at: null })
      .sort({ name: 1 })
      .lean<SecretRowDocument[]>();
  }

  /** The row, including one whose deletion was interrupted (so that a retry can finish it). */
  async find(tenantId: string, environmentId: string, name: string): Promise<SecretRowDocument | undefined> {
    const doc = await this.model.findOne({ _id: secretKey(tenantId, environmentId, name) }).lean<SecretRowDocument>();
    return doc ?? undefined;
  }

  /** Rows that exist for readers, by name. */
  async findLive(tenantId: string, environmentId: string, names: readonly string[]): Promise<Map<string, SecretRowDocument>> {
    const unique = [...new Set(names)];
    const docs = await Promise.all(
      unique.map((name) => this.model.findOne({ _id: secretKey(tenantId, environmentId, name) }).lean<SecretRowDocument>()),
    );
    return new Map(docs.filter((doc) => doc !== null && !doc.retiring_at).map((doc) => [doc!.name, doc!]));
  }

  async markRetiring(row: Pick<SecretRowDocument, '_id' | 'secret_id'>): Promise<void> {
    await this.model.updateOne({ _id: row._id, secret_id: row.secret_id, retiring_at: null }, { $set: { retiring_at: new Date() } });
  }

  /** Removes this incarnation only: a row written anew under the same name stays. */
  async remove(row: Pick<SecretRowDocument, '_id' | 'secret_id'>): Promise<void> {
    await this.model.deleteOne({ _id: row._id, secret_id: row.secret_id });
  }
}
