import { Schema, type ClientSession, type Connection } from 'mongoose';
import { effectiveQuotaLimits, QUOTA_NAMES, QuotaLimitOverrides, type QuotaLimits } from '@envengine/contracts';
import { TenantScopedModel } from './tenant-scoped-model.ts';

interface TenantQuotaDocument {
  /** The tenant's id: one document per tenant. */
  _id: string;
  tenant_id: string;
  /** The operator's limits for this tenant; a quota absent here has the default. */
  limits: QuotaLimitOverrides;
  /** Written by every admission, so that two admissions of one tenant conflict. */
  admissions: number;
}

const tenantQuotaSchema = new Schema<TenantQuotaDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    limits: Object.fromEntries(QUOTA_NAMES.map((name) => [name, { type: Number, default: undefined }])),
    admissions: { type: Number, required: true, default: 0 },
  },
  { versionKey: false, collection: 'tenant_quotas', minimize: false },
);

/**
 * A scope's per-tenant quota document (each scope keeps one in its own database, with the
 * limits of the quotas it checks). An admission writes it first in the transaction that
 * counts the use and makes the new thing: MongoDB has no predicate locks, so two
 * admissions of one tenant must conflict (one runs again with the other's write in view)
 * for a count-then-insert to hold the limit exactly, across replicas. Admissions of
 * different tenants never meet.
 */
export class TenantQuotas {
  private readonly quotas: TenantScopedModel<TenantQuotaDocument>;
  /** Tenants whose document exists: made once outside any transaction (two upserts in racing transactions would clash on the key). */
  private readonly known = new Set<string>();

  constructor(connection: Connection) {
    this.quotas = TenantScopedModel.of(connection, 'TenantQuota', tenantQuotaSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.quotas.ensureIndexes();
  }

  private async ensure(tenantId: string): Promise<void> {
    if (this.known.has(tenantId)) return;
    await this.quotas.updateOne(tenantId, { _id: tenantId }, { $setOnInsert: { limits: {}, admissions: 0 } }, { upsert: true });
    if (this.known.size > 100_000) this.known.clear();
    this.known.add(tenantId);
  }

  /**
   * Call first thing in an admission's transaction: writes the tenant's document (the
   * fence) and answers the limits in force. Call `prepare` before the transaction.
   */
  async admit(tenantId: string, session: ClientSession): Promise<QuotaLimits> {
    const doc = await this.quotas.findOneAndUpdate(tenantId, { _id: tenantId }, { $inc: { admissions: 1 } }, { session, projection: { limits: 1 } });
    return effectiveQuotaLimits(doc?.limits);
  }

  /** Makes the tenant's document if missing; before `admit`'s transaction. */
  prepare(tenantId: string): Promise<void> {
    return this.ensure(tenantId);
  }

  /** The limits in force, read without a fence (for `GET /quotas`). */
  async limits(tenantId: string): Promise<QuotaLimits> {
    const doc = await this.quotas.findOne(tenantId, { _id: tenantId }, { projection: { limits: 1 } });
    return effectiveQuotaLimits(doc?.limits);
  }

  /** Sets some of the tenant's limits (the operator's admin command); `null` puts one back to the default. */
  async set(tenantId: string, overrides: QuotaLimitOverrides): Promise<QuotaLimits> {
    const checked = QuotaLimitOverrides.parse(overrides);
    const $set: Record<string, number> = {};
    const $unset: Record<string, ''> = {};
    for (const [name, value] of Object.entries(checked)) {
      if (value === null) $unset[`limits.${name}`] = '';
      else if (value !== undefined) $set[`limits.${name}`] = value;
    }
    const doc = await this.quotas.findOneAndUpdate(
      tenantId,
      { _id: tenantId },
      { ...(Object.keys($set).length > 0 ? { $set } : {}), ...(Object.keys($unset).length > 0 ? { $unset } : {}), $setOnInsert: { admissions: 0 } },
      { upsert: true, projection: { limits: 1 } },
    );
    return effectiveQuotaLimits(doc?.limits);
  }
}
