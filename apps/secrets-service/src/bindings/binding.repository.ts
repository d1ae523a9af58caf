import type { Connection, Model } from 'mongoose';
import type { PutBindingRequest } from '@envengine/contracts';
import { randomBytes } from 'node:crypto';
import { ensureCollectionAndIndexes, isDuplicateKeyError, modelFor, TtlCache } from '@envengine/service-kit';
import { bindingKey, bindingSchema, type BindingDocument } from './binding.schema.ts';

/** Bindings of one environment at a time; every query carries tenant and environment. */
export class BindingRepository {
  private readonly model: Model<BindingDocument>;
  /** Bindings by address for resolution, the path every attempt start takes. */
  private readonly cache: TtlCache<BindingDocument | null>;

  constructor(connection: Connection, options: { readCacheTtlMs?: number } = {}) {
    this.cache = new TtlCache({ ttlMs: options.readCacheTtlMs ?? 0, maxEntries: 50_000 });
    this.model =
      modelFor(connection, 'Binding', bindingSchema);
  }

  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.model);
  }

  async list(tenantId: string, environmentId: string): Promise<BindingDocument[]> {
    return this.model.find({ tenant_id: tenantId, environment_id: environmentId }).sort({ name: 1 }).lean<BindingDocument[]>();
  }

  async find(tenantId: string, environmentId: string, name: string): Promise<BindingDocument | undefined> {
    const key = bindingKey(tenantId, environmentId, name);
    const doc = await this.cache.get(key, () => this.model.findOne({ _id: key }).lean<BindingDocument>());
    return doc ?? undefined;
  }

  /** Replaces the whole binding, creating it when absent; `created` tells which. */
  async replace(
    tenantId: string,
    environmentId: string,
    name: string,
    binding: PutBindingRequest,
  ): Promise<{ doc: BindingDocument; created: boolean }> {
    const revision = randomBytes(9).toString('base64url');
    this.cache.delete(bindingKey(tenantId, environmentId, name));
    const now = new Date();
    const upsert = () =>
      this.model
        .findOneAndUpdate(
          { _id: bindingKey(tenantId, environmentId, name) },
          {
            $set: {
              revision,
              config_json: JSON.stringify(binding.config),
              secret_refs: Object.entries(binding.secret_refs).map(([setting, secret]) => ({ setting, secret })),
              mode: binding.mode,
              updated_at: now,
            },
            $setOnInsert: { tenant_id: tenantId, environment_id: environmentId, name, first_revision: revision, inserted_at: now },
          },
          { upsert: true, returnDocument: 'after' },
        )
        .lean<BindingDocument>();
    let doc: BindingDocument | null;
    try {
      doc = await upsert();
    } catch (error) {
      // Two first PUTs at once: one insert wins, the other replaces what it inserted.
      if (!isDuplicateKeyError(error)) throw error;
      doc = await upsert();
    }
    this.cache.delete(bindingKey(tenantId, environmentId, name));
    return { doc: doc!, created: doc!.first_revision === revision };
  }

  async remove(tenantId: string, environmentId: string, name: string): Promise<boolean> {
    const key = bindingKey(tenantId, environmentId, name);
    this.cache.delete(key);
    const result = await this.model.deleteOne({ _id: key });
    this.cache.delete(key);
    return result.deletedCount === 1;
  }
}
