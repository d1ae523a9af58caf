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

/** Internal: a schedule's tick asks for a run through the same path as a manual run. */
export const ScheduledRunRequest = z.strictObject({
  schedule: z.string().min(1).max(200),
  job: z.string().min(1).max(200),
  /** The tick's wall time in the schedule's zone; one run per (schedule, tick). */
  tick: z.string().min(1).max(40),
  /**
   * The environment the schedule was made for: a schedule left behind by a deleted
   * environment never starts a run in a new one of the same name (404 instead).
   */
  environment_id: z.string().min(1).max(64).optional(),
});
export type ScheduledRunRequest = z.infer<typeof ScheduledRunRequest>;

/**
 * `started` (a new run), `repeat` (this tick already has its run), `paused` (nothing
 * started), `skipped_overlap` (the schedule's previous run is still going; counted),
 * `skipped_quota` (the tenant or environment has as many queued runs as its quota allows;
 * the tick is dropped, as a cron job's that finds its queue full), or `not_a_fire_time` (a tick Temporal started in a repeated hour that the clock-change rule
 * does not fire: nothing asked of the placement-service).
 */
export const ScheduledRunOutcome = z.object({
  outcome: z.enum(['started', 'repeat', 'paused', 'skipped_overlap', 'skipped_quota', 'not_a_fire_time']),
  run_id: z.string().nullable(),
});
export type ScheduledRunOutcome = z.infer<typeof ScheduledRunOutcome>;
