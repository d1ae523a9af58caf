import type { Connection, Model } from 'mongoose';
import { newId } from '@envengine/resource-ids';
import { ensureCollectionAndIndexes, isDuplicateKeyError, modelFor, TtlCache } from '@envengine/service-kit';
import { secretKey, secretRowSchema, type SecretRowDocument } from './secret-row.schema.ts';

export class SecretRowRepository {
  private readonly model: Model<SecretRowDocument>;
  /** Rows by address for the read paths; deletions and checks before acting read fresh. */
  private readonly cache: TtlCache<SecretRowDocument | null>;

  constructor(connection: Connection, options: { readCacheTtlMs?: number } = {}) {
    this.cache = new TtlCache({ ttlMs: options.readCacheTtlMs ?? 0, maxEntries: 50_000 });
    this.model =
      modelFor(connection, 'SecretRow', secretRowSchema);
  }

  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.model);
  }

  /** The secret's row, created when there is none. */
  async findOrCreate(tenantId: string, environmentId: string, name: string, backend: string): Promise<SecretRowDocument> {
    const key = secretKey(tenantId, environmentId, name);
    for (;;) {
      const existing = await this.cached(key);
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
      } finally {
        this.cache.delete(key);
      }
    }
  }

  /** Whether this incarnation of the secret still exists for readers. */
  async isLive(row: Pick<SecretRowDocument, '_id' | 'secret_id'>): Promise<boolean> {
    // Read by primary key alone and compared here: FerretDB answers only that from an index.
    const current = await this.model.findOne({ _id: row._id }, { secret_id: 1, retiring_at: 1 }).lean<SecretRowDocument>();
    const live = current?.secret_id === row.secret_id && !current.retiring_at;
    if (!live) this.cache.delete(row._id);
    return live;
  }

  private cached(key: string): Promise<SecretRowDocument | null> {
    return this.cache.get(key, () => this.model.findOne({ _id: key }).lean<SecretRowDocument>());
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
      unique.map((name) => this.cached(secretKey(tenantId, environmentId, name))),
    );
    return new Map(docs.filter((doc) => doc !== null && !doc.retiring_at).map((doc) => [doc!.name, doc!]));
  }

  async markRetiring(row: Pick<SecretRowDocument, '_id' | 'secret_id'>): Promise<void> {
    this.cache.delete(row._id);
    await this.model.updateOne({ _id: row._id, secret_id: row.secret_id, retiring_at: null }, { $set: { retiring_at: new Date() } });
  }

  /** Removes this incarnation only: a row written anew under the same name stays. */
  async remove(row: Pick<SecretRowDocument, '_id' | 'secret_id'>): Promise<void> {
    this.cache.delete(row._id);
    await this.model.deleteOne({ _id: row._id, secret_id: row.secret_id });
    this.cache.delete(row._id);
  }
}
