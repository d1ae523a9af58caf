import { z } from 'zod';
import { EnvironmentPathParams } from './environment.ts';

/** A schedule as a deployment's manifest declares it (validated at ingest). */
export const ScheduleDefinition = z.object({ name: z.string(), job: z.string(), cron: z.string(), timezone: z.string() });
export type ScheduleDefinition = z.infer<typeof ScheduleDefinition>;

/** A schedule of a stored manifest: stored as sent, so without its zone when the manifest left the default. */
const StoredSchedule = ScheduleDefinition.extend({ timezone: z.string().default('UTC') });

/** The schedules of a stored manifest; a manifest without any has none. */
export function schedulesOfManifest(manifest: unknown): ScheduleDefinition[] {
  const parsed = z.object({ schedules: z.array(StoredSchedule).optional() }).safeParse(manifest);
  return parsed.success ? (parsed.data.schedules ?? []) : [];
}

/**
 * What a schedule's tick came to (docs/design.md#schedules-pause-and-resume): `run_created`;
 * `late` (its run was made, more than `LATE_TICK_MS` after the fire time); `skipped_overlap`
 * (the schedule's previous run was still going); `skipped_paused` (the environment's
 * schedules were paused, or it was being deleted); `skipped_quota` (the tenant or environment
 * had as many queued runs as its quota allows); `missed` (a fire time that passed while the
 * engine was down or behind: only the latest of such times fires).
 */
export const ScheduleTickOutcome = z.enum(['run_created', 'late', 'skipped_overlap', 'skipped_paused', 'skipped_quota', 'missed']);
export type ScheduleTickOutcome = z.infer<typeof ScheduleTickOutcome>;

/** A tick whose run is made more than this long after its fire time is recorded `late`. */
export const LATE_TICK_MS = 60_000;

/** A schedule's last tick: its fire time, what came of it, and the fire times missed just before it. */
export const ScheduleTick = z.object({
  fire_at: z.iso.datetime(),
  outcome: ScheduleTickOutcome.exclude(['missed']),
  run_id: z.string().nullable(),
  /** From the fire time to the tick's processing. */
  lateness_seconds: z.number().nonnegative(),
  /** Fire times missed before this one (downtime), each counted `missed`. */
  missed: z.number().int().nonnegative(),
});
export type ScheduleTick = z.infer<typeof ScheduleTick>;

/** `GET /environments/:name/schedules`: the active deployment's schedules as they fire now. */
export const Schedule = z.object({
  name: z.string(),
  job: z.string(),
  cron: z.string(),
  timezone: z.string(),
  /** The environment's pause flag: schedules pause and resume together. */
  paused: z.boolean(),
  /** UTC; `null` while paused. */
  next_run_at: z.iso.datetime().nullable(),
  last_run_id: z.string().nullable(),
  /** Ticks skipped because the schedule's previous run was still going. */
  skipped_overlap: z.number().int().nonnegative(),
  /** The last tick and its outcome; null before the first. */
  last_tick: ScheduleTick.nullable(),
  /** Every tick of the schedule so far, by outcome. */
  ticks: z.record(ScheduleTickOutcome, z.number().int().nonnegative()),
});
export type Schedule = z.infer<typeof Schedule>;

export const SchedulePathParams = EnvironmentPathParams.extend({ schedule: z.string().min(1).max(200) });
export type SchedulePathParams = z.infer<typeof SchedulePathParams>;

export const MAX_NEXT_FIRE_TIMES = 1000;
export const ScheduleNextQuery = z.strictObject({
  count: z.coerce.number().int().min(1).max(MAX_NEXT_FIRE_TIMES).default(10),
  /** Preview from this instant instead of now (e.g. to see a past or future clock change). */
  after: z.iso.datetime({ offset: true }).optional(),
});
export type ScheduleNextQuery = z.infer<typeof ScheduleNextQuery>;

/**
 * `GET /environments/:name/schedules/:schedule/next`: the next fire times (UTC), by the
 * clock-change rule (a skipped wall time fires once after the jump, a repeated one once
 * at its first occurrence). Computed whether or not the schedule is paused.
 */
export const ScheduleNextFireTimes = z.object({
  name: z.string(),
  cron: z.string(),
  timezone: z.string(),
  paused: z.boolean(),
  after: z.iso.datetime(),
  next: z.array(z.iso.datetime()),
});
export type ScheduleNextFireTimes = z.infer<typeof ScheduleNextFireTimes>;

/** Internal: the schedules of an environment made those of a deployment (activation, rollback, restore). */
export const ReconcileSchedulesRequest = z.strictObject({ schedules: z.array(ScheduleDefinition).max(1000) });
export type ReconcileSchedulesRequest = z.infer<typeof ReconcileSchedulesRequest>;
export const ReconcileSchedulesResult = z.object({ created: z.array(z.string()), updated: z.array(z.string()), deleted: z.array(z.string()) });
export type ReconcileSchedulesResult = z.infer<typeof ReconcileSchedulesResult>;
/** Internal: a tear-down step, the environment's stored schedules removed. */
export const SchedulesRemoved = z.object({ deleted: z.number() });
export type SchedulesRemoved = z.infer<typeof SchedulesRemoved>;

/** Internal: the shard a pass of the tick loops goes over. */
export const ScheduleTickParams = z.strictObject({ shard: z.coerce.number().int().min(0).max(1023) });
export type ScheduleTickParams = z.infer<typeof ScheduleTickParams>;

/** Internal: one pass of a shard's tick loop over the schedules due now. */
export const TickShardResult = z.object({
  shard: z.number().int().nonnegative(),
  /** Schedules ticked in this pass, and how many batches they took. */
  ticked: z.number().int().nonnegative(),
  batches: z.number().int().nonnegative(),
  outcomes: z.record(ScheduleTickOutcome, z.number().int().nonnegative()),
  /** The earliest stored fire time of the shard after the pass (the loop sleeps until it); null: none. */
  next_due_at: z.iso.datetime().nullable(),
});
export type TickShardResult = z.infer<typeof TickShardResult>;
