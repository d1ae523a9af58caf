import type { ClientSession, Connection } from 'mongoose';
import type { PutBindingRequest } from '@envengine/contracts';
import { randomBytes } from 'node:crypto';
import { newId } from '@envengine/resource-ids';
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

  /**
   * Replaces the whole binding in one atomic upsert, creating it when absent; `created`
   * tells which. Inside the caller's transaction: two first PUTs at once may meet on the
   * unique key (a duplicate-key error), and the caller runs its transaction again.
   */
  async replace(
    tenantId: string,
    environmentId: string,
    name: string,
    binding: PutBindingRequest,
    session: ClientSession,
  ): Promise<{ doc: BindingDocument; created: boolean }> {
    const revision = randomBytes(9).toString('base64url');
    const now = new Date();
    const doc = await this.bindings.findOneAndUpdate(
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
      { upsert: true, session },
    );
    return { doc: doc!, created: doc!.first_revision === revision };
  }

  /** Removes the binding inside the caller's transaction; whether there was one. */
  remove(tenantId: string, environmentId: string, name: string, session: ClientSession): Promise<boolean> {
    return this.bindings.deleteOne(tenantId, { environment_id: environmentId, name }, { session });
  }

  /** Removes every binding of an environment (its tear-down); how many. */
  removeAll(tenantId: string, environmentId: string): Promise<number> {
    return this.bindings.deleteMany(tenantId, { environment_id: environmentId });
  }
}
