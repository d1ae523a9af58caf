import { Schema, type ClientSession, type Connection } from 'mongoose';
import type { DeploymentQuotas, Materialization, RecordMaterializationRequest, StoredColumn } from '@envengine/contracts';
import type { EventCause, EventOutbox } from '@envengine/event-log';
import { newId } from '@envengine/resource-ids';
import { ApiError, isDuplicateKeyError, quotaExceeded } from '@envengine/service-kit';
import { inTransaction, TenantQuotas, TenantScopedModel } from '@envengine/tenant-data';

interface MaterializationDocument {
  _id: string;
  tenant_id: string;
  environment_id: string;
  asset_key: string;
  columns: StoredColumn[];
  row_count: number;
  location: string | null;
  bytes: number | null;
  run_id: string | null;
  attempt_id: string | null;
  status: 'latest' | 'quarantined';
  quarantine: { reason: string; deployment_id: string; at: Date } | null;
  inserted_at: Date;
}

const materializationSchema = new Schema<MaterializationDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    asset_key: { type: String, required: true },
    columns: { type: Schema.Types.Mixed, required: true },
    row_count: { type: Number, required: true },
    location: { type: String, default: null },
    bytes: { type: Number, default: null },
    run_id: { type: String, default: null },
    attempt_id: { type: String, default: null },
    status: { type: String, required: true },
    quarantine: { type: Schema.Types.Mixed, default: null },
    inserted_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'materializations' },
);
materializationSchema.index({ tenant_id: 1, environment_id: 1, asset_key: 1, _id: -1 });
// The `materialization_bytes` quota's use, summed off the index alone.
materializationSchema.index({ tenant_id: 1, bytes: 1 });

function toMaterialization(doc: MaterializationDocument): Materialization {
  return {
    id: doc._id,
    asset_key: doc.asset_key,
    columns: doc.columns,
    row_count: doc.row_count,
    location: doc.location ?? null,
    bytes: doc.bytes ?? null,
    run_id: doc.run_id ?? null,
    attempt_id: doc.attempt_id ?? null,
    status: doc.status,
    quarantine: doc.quarantine
      ? { reason: doc.quarantine.reason, deployment_id: doc.quarantine.deployment_id, at: doc.quarantine.at.toISOString() }
      : null,
    inserted_at: doc.inserted_at.toISOString(),
  };
}

/** What runs stored for each asset; the newest one of an asset is its current latest. */
export class MaterializationRepository {
  private readonly materializations: TenantScopedModel<MaterializationDocument>;
  /** The scope's per-tenant quota documents: `materialization_bytes`. */
  private readonly quotas: TenantQuotas;

  /** @param outbox the scope's event outbox: a quarantine writes its event in its own transaction. */
  constructor(
    private readonly connection: Connection,
    private readonly outbox: EventOutbox,
  ) {
    this.materializations = TenantScopedModel.of(connection, 'Materialization', materializationSchema);
    this.quotas = new TenantQuotas(connection);
  }

  ensureIndexes(): Promise<void> {
    return Promise.all([this.materializations.ensureIndexes(), this.quotas.ensureIndexes()]).then(() => undefined);
  }

  /**
   * Records a materialization, within the tenant's `materialization_bytes` quota (429, and
   * nothing recorded: the stored bytes of its materializations and this one's would pass
   * it). Its id is the worker's (it names the file): one taken already, by any tenant, is
   * 422 and changes nothing, the same answer whoever holds it, unless it is this attempt's
   * own record of the same id (a retry whose answer was lost, answered as recorded even at
   * the quota).
   */
  async record(tenantId: string, input: RecordMaterializationRequest): Promise<Materialization> {
    try {
      const recorded = await this.insertWithinQuota(tenantId, input);
      if (recorded) return recorded;
    } catch (error) {
      if (!isDuplicateKeyError(error) || input.id === undefined) throw error;
    }
    const own = await this.materializations.findOne(tenantId, { _id: input.id!, attempt_id: input.attempt_id, location: input.location });
    if (own) return toMaterialization(own);
    throw new ApiError('invalid_request', `Materialization id ${input.id} is taken: each emit records a new id, and nothing was recorded.`, {
      details: [{ path: 'id', message: 'must be a new materialization id' }],
    });
  }

  /**
   * Inserts the record in a transaction that first writes the tenant's quota document (the
   * fence: two records of one tenant take turns, across replicas, so neither misses the
   * other's bytes), then sums the bytes held. Undefined when the tenant has a record of this
   * id already (the retry's answer is looked up by the caller).
   */
  private async insertWithinQuota(tenantId: string, input: RecordMaterializationRequest): Promise<Materialization | undefined> {
    return this.quotas.admission(tenantId, async (session, limits) => {
      if (input.id !== undefined && (await this.materializations.findOne(tenantId, { _id: input.id }, { session, projection: { _id: 1 } }))) return undefined;
      const adding = input.bytes ?? 0;
      const used = await this.storedBytes(tenantId, session);
      if (used + adding > limits.materialization_bytes) {
        throw quotaExceeded(
          'materialization_bytes',
          limits.materialization_bytes,
          `The materialization_bytes quota: your materializations take ${used} bytes, and this one (${adding} bytes) would pass it; it was not recorded, and its file is removed. Deleting environments (with ?purge_data=true) frees their bytes.`,
        );
      }
      return this.insert(tenantId, input, session);
    });
  }

  /** Bytes of every materialization the tenant has recorded (and not removed). */
  private async storedBytes(tenantId: string, session?: ClientSession): Promise<number> {
    const [total] = await this.materializations.aggregate<{ bytes: number }>(tenantId, {}, [{ $group: { _id: null, bytes: { $sum: '$bytes' } } }], { session });
    return total?.bytes ?? 0;
  }

  /** The `materialization_bytes` quota's limit and the tenant's use, for `GET /quotas`. */
  async quotaUse(tenantId: string): Promise<Pick<DeploymentQuotas, 'materialization_bytes'>> {
    const [limits, used] = await Promise.all([this.quotas.limits(tenantId), this.storedBytes(tenantId)]);
    return { materialization_bytes: { limit: limits.materialization_bytes, used } };
  }

  private async insert(tenantId: string, input: RecordMaterializationRequest, session?: ClientSession): Promise<Materialization> {
    const doc = await this.materializations.insert(tenantId, {
      _id: input.id ?? newId('mat'),
      environment_id: input.environment_id,
      asset_key: input.asset_key,
      columns: input.columns,
      row_count: input.row_count,
      location: input.location,
      bytes: input.bytes,
      run_id: input.run_id,
      attempt_id: input.attempt_id,
      status: 'latest',
      quarantine: null,
      inserted_at: new Date(),
    }, { session });
    return toMaterialization(doc);
  }

  /** Removes a materialization recorded by `attemptId` (and by no other); whether there was one. */
  retract(tenantId: string, id: string, attemptId: string): Promise<boolean> {
    return this.materializations.deleteOne(tenantId, { _id: id, attempt_id: attemptId });
  }

  /** The newest materialization of each asset key given. */
  async latest(tenantId: string, environmentId: string, assetKeys: readonly string[]): Promise<Map<string, Materialization>> {
    if (assetKeys.length === 0) return new Map();
    // The newest of each key straight off the index, however many older ones there are.
    const newest = await this.materializations.aggregate<{ _id: string; doc: MaterializationDocument }>(
      tenantId,
      { environment_id: environmentId, asset_key: { $in: [...assetKeys] } },
      [{ $sort: { tenant_id: 1, environment_id: 1, asset_key: 1, _id: -1 } }, { $group: { _id: '$asset_key', doc: { $first: '$$ROOT' } } }],
    );
    return new Map(newest.map(({ _id, doc }) => [_id, toMaterialization(doc)]));
  }

  /** The asset's materializations, newest first, a page at a time (`before`: the last id of the previous page). */
  async page(tenantId: string, environmentId: string, assetKey: string, page: { limit: number; before?: string | undefined }): Promise<Materialization[]> {
    const docs = await this.materializations.find(
      tenantId,
      { environment_id: environmentId, asset_key: assetKey, ...(page.before ? { _id: { $lt: page.before } } : {}) },
      { sort: { _id: -1 }, limit: page.limit },
    );
    return docs.map(toMaterialization);
  }

  /** One materialization of an environment's asset, or undefined. */
  async findOfAsset(tenantId: string, environmentId: string, assetKey: string, id: string): Promise<Materialization | undefined> {
    const doc = await this.materializations.findOne(tenantId, { _id: id, environment_id: environmentId, asset_key: assetKey });
    return doc ? toMaterialization(doc) : undefined;
  }

  /** `ctx.read(key)`: the asset's newest materialization that is not quarantined, if any. */
  async latestUsable(tenantId: string, environmentId: string, assetKey: string): Promise<Materialization | undefined> {
    const [doc] = await this.materializations.find(
      tenantId,
      { environment_id: environmentId, asset_key: assetKey, status: 'latest' },
      { sort: { _id: -1 }, limit: 1 },
    );
    return doc ? toMaterialization(doc) : undefined;
  }

  /**
   * Marks a materialization quarantined in place, naming why and which deployment found
   * it, with its `materialization.quarantined` event, in one transaction. One quarantined
   * already (a retried activation) stays as it is, and no second event is written.
   * Whether this call quarantined it.
   */
  async quarantine(
    tenantId: string,
    id: string,
    reason: string,
    deploymentId: string,
    context: { environment: { id: string; name: string }; cause: EventCause },
  ): Promise<boolean> {
    return inTransaction(this.connection, async (session) => {
      const quarantined = await this.materializations.findOneAndUpdate(
        tenantId,
        { _id: id, environment_id: context.environment.id, status: 'latest' },
        { $set: { status: 'quarantined', quarantine: { reason, deployment_id: deploymentId, at: new Date() } } },
        { session, projection: { asset_key: 1 } },
      );
      if (!quarantined) return false;
      await this.outbox.record(
        tenantId,
        {
          type: 'materialization.quarantined',
          environment: context.environment,
          subject: { kind: 'materialization', id },
          cause: context.cause,
          data: { asset: quarantined.asset_key, deployment_id: deploymentId, reason },
        },
        session,
      );
      return true;
    });
  }

  /** Removes the environment's materialization records (its tear-down; the files stay unless purged first); how many. */
  removeAllOf(tenantId: string, environmentId: string): Promise<number> {
    return this.materializations.deleteMany(tenantId, { environment_id: environmentId });
  }
}
