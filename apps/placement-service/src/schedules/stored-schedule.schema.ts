import { Schema } from 'mongoose';
import type { ScheduleTickOutcome } from '@envengine/contracts';

/** A schedule's last tick, as the tick loop recorded it. */
export interface StoredTick {
  fire_at: Date;
  outcome: Exclude<ScheduleTickOutcome, 'missed'>;
  run_id: string | null;
  lateness_ms: number;
  missed: number;
  recorded_at: Date;
}

/**
 * A schedule of an environment's active deployment, with its next fire time
 * (docs/design.md#schedules-pause-and-resume): what the tick loops read. One per
 * (environment, schedule name).
 */
export interface StoredScheduleDocument {
  /** `<environment id>:<schedule name>`. */
  _id: string;
  tenant_id: string;
  environment_id: string;
  name: string;
  job: string;
  cron: string;
  timezone: string;
  /** Which tick loop ticks it: all of an environment's schedules are in the same shard. */
  shard: number;
  /** The next fire time not yet ticked; null when the cron matches no later time. */
  next_fire_at: Date | null;
  last_tick: StoredTick | null;
  /** Ticks so far, by outcome. */
  ticks: Partial<Record<ScheduleTickOutcome, number>>;
  updated_at: Date;
}

export const storedScheduleSchema = new Schema<StoredScheduleDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    name: { type: String, required: true },
    job: { type: String, required: true },
    cron: { type: String, required: true },
    timezone: { type: String, required: true },
    shard: { type: Number, required: true },
    next_fire_at: { type: Date, default: null },
    last_tick: { type: Schema.Types.Mixed, default: null },
    ticks: { type: Schema.Types.Mixed, default: {} },
    updated_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'schedules', minimize: false },
);
// What a tick loop reads: its shard's schedules due first. Not partial: a `$lte` on a date
// does not imply `$type: 'date'` to the planner, which would scan the collection instead.
storedScheduleSchema.index({ shard: 1, next_fire_at: 1 });
// An environment's schedules (the list, reconcile, pause, tear-down).
storedScheduleSchema.index({ tenant_id: 1, environment_id: 1 });
