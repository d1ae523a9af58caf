import { Schema, type Connection } from 'mongoose';
import { TenantScopedModel } from '@envengine/tenant-data';

export interface ScheduleOverlapDocument {
  /** `<environment id>:<schedule name>`. */
  _id: string;
  tenant_id: string;
  environment_id: string;
  schedule: string;
  skipped_overlap: number;
}

const scheduleOverlapSchema = new Schema<ScheduleOverlapDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    schedule: { type: String, required: true },
    skipped_overlap: { type: Number, required: true },
  },
  { versionKey: false, collection: 'schedule_overlaps' },
);
scheduleOverlapSchema.index({ tenant_id: 1, environment_id: 1 });

/** How many ticks of each schedule were skipped because its previous run was still going. */
export class ScheduleOverlapRepository {
  private readonly overlaps: TenantScopedModel<ScheduleOverlapDocument>;

  constructor(connection: Connection) {
    this.overlaps = TenantScopedModel.of(connection, 'ScheduleOverlap', scheduleOverlapSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.overlaps.ensureIndexes();
  }

  async countSkip(tenantId: string, environmentId: string, schedule: string): Promise<void> {
    await this.overlaps.updateOne(
      tenantId,
      { _id: `${environmentId}:${schedule}` },
      { $inc: { skipped_overlap: 1 }, $setOnInsert: { environment_id: environmentId, schedule } },
      { upsert: true },
    );
  }

  async skippedOf(tenantId: string, environmentId: string): Promise<Map<string, number>> {
    const rows = await this.overlaps.find(tenantId, { environment_id: environmentId });
    return new Map(rows.map((row) => [row.schedule, row.skipped_overlap]));
  }

  /** Removes the environment's skip counts (its tear-down); how many. */
  deleteAllOf(tenantId: string, environmentId: string): Promise<number> {
    return this.overlaps.deleteMany(tenantId, { environment_id: environmentId });
  }
}
