import { Schema, type ClientSession, type Connection } from 'mongoose';
import { effectiveQuotaLimits, QUOTA_NAMES, QuotaLimitOverrides, type QuotaLimits } from '@envengine/contracts';
import { TenantScopedModel } from './tenant-scoped-model.ts';
import { inTransaction } from './transactions.ts';

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
 * different tenants never meet. Within one process a tenant's admissions also wait for
 * each other before they start: racing there, they would only conflict on the document,
 * and a transaction that loses is run again at once, so twenty of them spin on two cores.
 */
export class TenantQuotas {
  private readonly quotas: TenantScopedModel<TenantQuotaDocument>;
  /** Tenants whose document exists: made once outside any transaction (two upserts in racing transactions would clash on the key). */
  private readonly known = new Set<string>();
  /** Per tenant, the end of the last admission begun in this process. */
  private readonly admissionTails = new Map<string, Promise<unknown>>();

  constructor(private readonly connection: Connection) {
    this.quotas = TenantScopedModel.of(connection, 'TenantQuota', tenantQuotaSchema);
  }

  /**
   * Runs `work` in a transaction that first writes the tenant's quota document (the fence)
   * and gets the limits in force: it counts what the tenant holds and makes the new thing.
   * A tenant's admissions in this process run one after another.
   */
  async admission<T>(tenantId: string, work: (session: ClientSession, limits: QuotaLimits) => Promise<T>): Promise<T> {
    await this.ensure(tenantId);
    const previous = this.admissionTails.get(tenantId) ?? Promise.resolve();
    const turn = previous.catch(() => undefined).then(() => inTransaction(this.connection, async (session) => work(session, await this.admit(tenantId, session))));
    this.admissionTails.set(tenantId, turn);
    try {
      return await turn;
    } finally {
      // The last in line clears its tenant's entry, so the map holds only tenants admitting now.
      if (this.admissionTails.get(tenantId) === turn) this.admissionTails.delete(tenantId);
    }
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

  /** Writes the tenant's document (the fence) in the admission's transaction, and answers the limits in force. */
  private async admit(tenantId: string, session: ClientSession): Promise<QuotaLimits> {
    // Upserted too: a document removed since this process made it must still be written, or the fence would not hold.
    const doc = await this.quotas.findOneAndUpdate(tenantId, { _id: tenantId }, { $inc: { admissions: 1 } }, { session, upsert: true, projection: { limits: 1 } });
    return effectiveQuotaLimits(doc?.limits);
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
