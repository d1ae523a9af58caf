import type { Connection, Model } from 'mongoose';
import type { PutBindingRequest } from '@envengine/contracts';
import { newId } from '@envengine/resource-ids';
import { ensureCollectionAndIndexes, isDuplicateKeyError } from '@envengine/service-kit';
import { bindingSchema, type BindingDocument } from './binding.schema.ts';

/** Bindings of one environment at a time; every query carries tenant and environment. */
export class BindingRepository {
  private readonly model: Model<BindingDocument>;

  constructor(connection: Connection) {
    this.model =
      (connection.models.Binding as Model<BindingDocument> | undefined) ??
      connection.model<BindingDocument>('Binding', bindingSchema);
  }

  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.model);
  }

  async list(tenantId: string, environmentId: string): Promise<BindingDocument[]> {
    return this.model.find({ tenant_id: tenantId, environment_id: environmentId }).sort({ name: 1 }).lean<BindingDocument[]>();
  }

  async find(tenantId: string, environmentId: string, name: string): Promise<BindingDocument | undefined> {
    const doc = await this.model.findOne({ tenant_id: tenantId, environment_id: environmentId, name }).lean<BindingDocument>();
    return doc ?? undefined;
  }

  /** Replaces the whole binding, creating it when absent; `created` tells which. */
  async replace(
    tenantId: string,
    environmentId: string,
    name: string,
    binding: PutBindingRequest,
  ): Promise<{ doc: BindingDocument; created: boolean }> {
    const candidateId = newId('bnd');
    const now = new Date();
    const upsert = () =>
      this.model
        .findOneAndUpdate(
          { tenant_id: tenantId, environment_id: environmentId, name },
          {
            $set: {
              config_json: JSON.stringify(binding.config),
              secret_refs: Object.entries(binding.secret_refs).map(([setting, secret]) => ({ setting, secret })),
              mode: binding.mode,
              updated_at: now,
            },
            $setOnInsert: { _id: candidateId, inserted_at: now },
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
    return { doc: doc!, created: doc!._id === candidateId };
  }

  async remove(tenantId: string, environmentId: string, name: string): Promise<boolean> {
    const result = await this.model.deleteOne({ tenant_id: tenantId, environment_id: environmentId, name });
    return result.deletedCount === 1;
  }
}
