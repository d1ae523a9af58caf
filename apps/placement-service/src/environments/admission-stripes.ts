import { randomInt } from 'node:crypto';
import type { ClientSession, Connection } from 'mongoose';
import { TenantScopedModel } from '@envengine/tenant-data';
import { ADMISSION_STRIPES, admissionStripeSchema, type AdmissionStripeDocument } from './environment.schema.ts';

/**
 * An environment's run-admission stripes: the documents a manual run writes as its fence
 * against a tear-down (a write conflicts where a read does not), spread over
 * ADMISSION_STRIPES of them so that concurrent runs of one environment seldom write the
 * same one. A tear-down closes them all in its transaction; each run admitted through one
 * therefore conflicts with it.
 */
export class AdmissionStripes {
  private readonly stripes: TenantScopedModel<AdmissionStripeDocument>;

  constructor(connection: Connection) {
    this.stripes = TenantScopedModel.of(connection, 'EnvironmentAdmissionStripe', admissionStripeSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.stripes.ensureIndexes();
  }

  /** Writes one open stripe of the environment, at random; false when it has none open (none made yet, or closed by a tear-down). */
  async admit(tenantId: string, environmentId: string, session: ClientSession): Promise<boolean> {
    const stripe = await this.stripes.updateOne(tenantId, { _id: `${environmentId}:${randomInt(ADMISSION_STRIPES)}`, open: true }, { $inc: { admitted: 1 } }, { session });
    return stripe.matched === 1;
  }

  /** Makes the environment's stripes, open, unless it has some; inside the caller's transaction, which fences the environment. */
  async openIfNone(tenantId: string, environmentId: string, session: ClientSession): Promise<void> {
    if ((await this.stripes.count(tenantId, { environment_id: environmentId }, { session })) > 0) return;
    await this.stripes.insertManyOwned(
      Array.from({ length: ADMISSION_STRIPES }, (_, stripe) => ({ tenantId, doc: { _id: `${environmentId}:${stripe}`, environment_id: environmentId, open: true, admitted: 0 } })),
      { session },
    );
  }

  /** Writes (and closes) every stripe of the environment, inside the tear-down's transaction. */
  async closeAll(tenantId: string, environmentId: string, session: ClientSession): Promise<void> {
    await this.stripes.updateMany(tenantId, { environment_id: environmentId }, { $set: { open: false } }, { session });
  }

  async removeAll(tenantId: string, environmentId: string): Promise<void> {
    await this.stripes.deleteMany(tenantId, { environment_id: environmentId });
  }
}
