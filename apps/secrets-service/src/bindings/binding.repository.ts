import type { Connection } from 'mongoose';
import type { PutBindingRequest } from '@envengine/contracts';
import { randomBytes } from 'node:crypto';
import { newId } from '@envengine/resource-ids';
import { isDuplicateKeyError } from '@envengine/service-kit';
import { TenantScopedModel } from '@envengine/tenant-data';
import { bindingSchema, type BindingDocument } from './binding.schema.ts';

/** Bindings of one environment at a time; every query carries tenant and environment. */
export class BindingRepository {
  private readonly bindings: TenantScopedModel<BindingDocument>;

  constructor(connection: Connection) {
    this.bindings = TenantScopedModel.of(connection, 'Binding', bindingSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.bindings.ensureIndexes();
  }

  list(tenantId: string, environmentId: string): Promise<BindingDocument[]> {
    return this.bindings.find(tenantId, { environment_id: environmentId }, { sort: { name: 1 } });
  }

  async find(tenantId: string, environmentId: string, name: string): Promise<BindingDocument | undefined> {
    return (await this.bindings.findOne(tenantId, { environment_id: environmentId, name })) ?? undefined;
  }

  /** Replaces the whole binding in one atomic upsert, creating it when absent; `created` tells which. */
  async replace(
    tenantId: string,
    environmentId: string,
    name: string,
    binding: PutBindingRequest,
  ): Promise<{ doc: BindingDocument; created: boolean }> {
    const revision = randomBytes(9).toString('base64url');
    const now = new Date();
    const upsert = () =>
      this.bindings.findOneAndUpdate(
        tenantId,
        { environment_id: environmentId, name },
        {
          $set: {
            revision,
            config_json: JSON.stringify(binding.config),
            secret_refs: Object.entries(binding.secret_refs).map(([setting, secret]) => ({ setting, secret })),
            mode: binding.mode,
            updated_at: now,
          },
          $setOnInsert: { _id: newId('bnd'), first_revision: revision, inserted_at: now },
        },
        { upsert: true },
      );
    let doc: BindingDocument | null;
    try {
      doc = await upsert();
    } catch (error) {
      // Two first PUTs at once: one insert wins, the other replaces what it inserted.
      if (!isDuplicateKeyError(error)) throw error;
      doc = await upsert();
    }
    return { doc: doc!, created: doc!.first_revision === revision };
  }

  remove(tenantId: string, environmentId: string, name: string): Promise<boolean> {
    return this.bindings.deleteOne(tenantId, { environment_id: environmentId, name });
  }

  /** Removes every binding of an environment (its tear-down); how many. */
  removeAll(tenantId: string, environmentId: string): Promise<number> {
    return this.bindings.deleteMany(tenantId, { environment_id: environmentId });
  }
}
