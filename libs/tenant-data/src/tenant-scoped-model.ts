import type { ClientSession, Connection, Model, PipelineStage, QueryFilter, Schema, SortOrder, UpdateQuery } from 'mongoose';
import { ensureCollectionAndIndexes, isDuplicateKeyError, modelFor } from '@envengine/service-kit';

/** A stored document that belongs to one tenant. */
export interface TenantOwned {
  _id: string;
  tenant_id: string;
}

/** A filter on everything but the tenant, which every method takes as its own argument. */
export type TenantFilter<T> = Omit<QueryFilter<T>, 'tenant_id'>;

export interface ReadOptions<T> {
  projection?: Partial<Record<keyof T & string, 0 | 1>>;
  sort?: Partial<Record<keyof T & string, SortOrder>>;
  limit?: number;
  session?: ClientSession;
}

export interface WriteOptions {
  session?: ClientSession;
}

export interface UpdateManyOptions extends WriteOptions {
  /** Which elements of an array `$[name]` in the update names (MongoDB's arrayFilters). */
  arrayFilters?: Array<Record<string, unknown>>;
}

/**
 * The only way repositories reach a tenant's documents: every read and write takes the
 * tenant first and puts it in the filter (or the inserted document), so a lookup by `_id`
 * alone cannot be written. Reads return plain objects (`lean`), never live documents;
 * inserts go through the model, so the schema casts and validates them.
 */
/**
 * The owner of the engine's own documents (its fences), in place of a tenant: no tenant's
 * id, which all start `ten_`, can be it.
 */
export const ENGINE_OWNER = 'engine';

export class TenantScopedModel<T extends TenantOwned> {
  constructor(private readonly model: Model<T>) {}

  /** The connection's model of that name (compiled from `schema` the first time), tenant-scoped. */
  static of<T extends TenantOwned>(connection: Connection, name: string, schema: Schema<T>): TenantScopedModel<T> {
    return new TenantScopedModel(modelFor(connection, name, schema));
  }

  /** Creates the collection, when missing, and the schema's indexes. */
  ensureIndexes(): Promise<void> {
    return ensureCollectionAndIndexes(this.model);
  }

  /** Types say it; this says it to a caller the types did not reach (`any`, JavaScript): a tenant is a non-empty string. */
  private requireTenant(tenantId: unknown, what: string): asserts tenantId is string {
    if (typeof tenantId !== 'string' || tenantId === '') throw new Error(`${this.model.modelName}: ${what} without a tenant`);
  }

  private scoped(tenantId: string, filter: TenantFilter<T>): QueryFilter<T> {
    this.requireTenant(tenantId, 'a query');
    return { ...filter, tenant_id: tenantId } as QueryFilter<T>;
  }

  async insert(tenantId: string, doc: Omit<T, 'tenant_id'>, options: WriteOptions = {}): Promise<T> {
    this.requireTenant(tenantId, 'an insert');
    const full = { ...doc, tenant_id: tenantId } as T;
    await this.model.insertOne(full as never, { session: options.session });
    return full;
  }

  /**
   * Inserts documents of possibly several tenants in one write, each under its own
   * tenant. Not cast by the schema (`lean`): for documents the code builds itself, where
   * the write's cost matters (an audit log).
   */
  async insertManyOwned(docs: ReadonlyArray<{ tenantId: string; doc: Omit<T, 'tenant_id'> }>, options: WriteOptions = {}): Promise<void> {
    for (const { tenantId } of docs) this.requireTenant(tenantId, 'an insert');
    await this.model.insertMany(
      docs.map(({ tenantId, doc }) => ({ ...doc, tenant_id: tenantId })),
      { ordered: false, lean: true, session: options.session },
    );
  }

  findOne(tenantId: string, filter: TenantFilter<T>, options: ReadOptions<T> = {}): Promise<T | null> {
    const query = this.model.findOne(this.scoped(tenantId, filter), options.projection ?? null, { session: options.session });
    if (options.sort) query.sort(options.sort as Record<string, SortOrder>);
    return query.lean<T>().exec();
  }

  find(tenantId: string, filter: TenantFilter<T>, options: ReadOptions<T> = {}): Promise<T[]> {
    const query = this.model.find(this.scoped(tenantId, filter), options.projection ?? null, { session: options.session });
    if (options.sort) query.sort(options.sort as Record<string, SortOrder>);
    if (options.limit) query.limit(options.limit);
    return query.lean<T[]>().exec();
  }

  /** The document after the update (or before it, when asked), null when none matched. */
  findOneAndUpdate(
    tenantId: string,
    filter: TenantFilter<T>,
    update: UpdateQuery<T>,
    options: WriteOptions & { upsert?: boolean; returnDocument?: 'before' | 'after'; projection?: ReadOptions<T>['projection'] } = {},
  ): Promise<T | null> {
    return this.upsertOnce(options, () =>
      this.model
        .findOneAndUpdate(this.scoped(tenantId, filter), update, {
          upsert: options.upsert ?? false,
          returnDocument: options.returnDocument ?? 'after',
          projection: options.projection,
          session: options.session,
        })
        .lean<T>()
        .exec(),
    );
  }

  /** The matching documents' count; with `limit`, at most that (the count stops there). */
  count(tenantId: string, filter: TenantFilter<T>, options: WriteOptions & { limit?: number } = {}): Promise<number> {
    return this.model.countDocuments(this.scoped(tenantId, filter), { session: options.session, ...(options.limit !== undefined ? { limit: options.limit } : {}) }).exec();
  }

  /** Removes the matching document and returns it, null when none matched. */
  findOneAndDelete(tenantId: string, filter: TenantFilter<T>, options: WriteOptions = {}): Promise<T | null> {
    return this.model.findOneAndDelete(this.scoped(tenantId, filter), { session: options.session }).lean<T>().exec();
  }

  async updateOne(tenantId: string, filter: TenantFilter<T>, update: UpdateQuery<T>, options: WriteOptions & { upsert?: boolean } = {}) {
    const result = await this.upsertOnce(options, () => this.model.updateOne(this.scoped(tenantId, filter), update, { upsert: options.upsert ?? false, session: options.session }));
    return { matched: result.matchedCount, modified: result.modifiedCount, upserted: result.upsertedCount };
  }

  /**
   * An upsert outside a transaction that lost the insert to a racing one (E11000 on the
   * unique index) is sent once more, and now matches the winner's document. MongoDB does
   * this retry itself only when the filter is exactly the unique index's fields, and
   * every filter here also holds the tenant. A second E11000 is a document of another
   * tenant's under that key, which this tenant must not touch: it is thrown. In a
   * transaction the error has aborted it; the caller's transaction decides.
   */
  private async upsertOnce<R>(options: WriteOptions & { upsert?: boolean }, write: () => Promise<R>): Promise<R> {
    if (!options.upsert || options.session) return write();
    try {
      return await write();
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
      return write();
    }
  }

  async updateMany(tenantId: string, filter: TenantFilter<T>, update: UpdateQuery<T>, options: UpdateManyOptions = {}): Promise<number> {
    return (
      await this.model.updateMany(this.scoped(tenantId, filter), update, {
        session: options.session,
        ...(options.arrayFilters ? { arrayFilters: options.arrayFilters } : {}),
      })
    ).modifiedCount;
  }

  /**
   * Several updates of the tenant's documents in one round trip (one `bulkWrite`, in
   * order); how many documents matched their filter, all told.
   */
  async updateEach(tenantId: string, updates: ReadonlyArray<{ filter: TenantFilter<T>; update: UpdateQuery<T> }>, options: WriteOptions = {}): Promise<number> {
    this.requireTenant(tenantId, 'a query');
    if (updates.length === 0) return 0;
    const result = await this.model.bulkWrite(
      updates.map(({ filter, update }) => ({ updateOne: { filter: this.scoped(tenantId, filter), update } })) as never,
      { session: options.session, ordered: true },
    );
    return result.matchedCount;
  }

  async deleteOne(tenantId: string, filter: TenantFilter<T>, options: WriteOptions = {}): Promise<boolean> {
    return (await this.model.deleteOne(this.scoped(tenantId, filter), { session: options.session })).deletedCount === 1;
  }

  async deleteMany(tenantId: string, filter: TenantFilter<T>, options: WriteOptions = {}): Promise<number> {
    return (await this.model.deleteMany(this.scoped(tenantId, filter), { session: options.session })).deletedCount;
  }

  /**
   * Documents of every tenant: only for what must find the tenant first (a token's owner,
   * by its hash) and for background sweeps (lost leases, undelivered dispatches), which
   * then act on each document under its own `tenant_id`.
   */
  findAcrossTenants(filter: QueryFilter<T>, options: ReadOptions<T> = {}): Promise<T[]> {
    const query = this.model.find(filter, options.projection ?? null, { session: options.session });
    if (options.sort) query.sort(options.sort as Record<string, SortOrder>);
    if (options.limit) query.limit(options.limit);
    return query.lean<T[]>().exec();
  }

  /** How many documents of every tenant match (the metrics' gauges, from background code only). */
  countAcrossTenants(filter: QueryFilter<T>): Promise<number> {
    return this.model.countDocuments(filter).exec();
  }

  /** An aggregation over every tenant's documents (background code only: the engine runner's admission across tenants). */
  aggregateAcrossTenants<R>(match: QueryFilter<T>, stages: PipelineStage[], options: WriteOptions = {}): Promise<R[]> {
    return this.model.aggregate<R>([{ $match: match }, ...stages], { session: options.session }).exec();
  }

  /** An aggregation that starts from the tenant's documents: its first stage is the tenant's `$match`. */
  aggregate<R>(tenantId: string, match: TenantFilter<T>, stages: PipelineStage[], options: WriteOptions = {}): Promise<R[]> {
    return this.model.aggregate<R>([{ $match: this.scoped(tenantId, match) }, ...stages], { session: options.session }).exec();
  }

}
