import type { ParsedCron } from './cron-expression.ts';
import { nextFireTimes } from './fire-times.ts';

/** Past this many missed ticks the count stops (a per-second schedule after a day down): `missed` says at least. */
export const MAX_MISSED_COUNTED = 1000;

/** What a schedule's tick does when the tick loop finds it due. */
export interface TickPlan {
  /** The fire time this tick is for: the latest one at or before `now`. */
  fireAt: number;
  /** Fire times between the stored one and `fireAt` that get no run (the engine was down or behind), counted up to `MAX_MISSED_COUNTED`. */
  missed: number;
  /** The schedule's next fire time after `fireAt`, or null when the cron matches no later time. */
  nextFireAt: number | null;
}

/**
 * The tick of a schedule whose stored next fire time `dueAt` has come (`dueAt <= now`), by
 * the catch-up rule (docs/design.md#schedules-pause-and-resume): the latest fire time at or
 * before `now` fires once, the earlier ones since `dueAt` are missed. Fire times come from
 * `nextFireTimes`, the code that the schedules' previews use, so a tick follows the
 * clock-change rule: a skipped wall time fires once after the jump, a repeated one once, at
 * its first occurrence.
 */
export function planTick(cron: ParsedCron, timeZone: string, dueAt: number, now: number): TickPlan {
  // The usual tick is on time: one fire time ahead is all there is to look at.
  const [following] = nextFireTimes(cron, timeZone, dueAt, 1);
  if (following === undefined || following > now) return { fireAt: dueAt, missed: 0, nextFireAt: following ?? null };
  // Behind: the fire times up to now, counted up to the cap, then the latest one fires.
  const fires = nextFireTimes(cron, timeZone, dueAt, MAX_MISSED_COUNTED + 1);
  const due = fires.filter((instant) => instant <= now);
  if (due.length <= MAX_MISSED_COUNTED) return { fireAt: due[due.length - 1]!, missed: due.length, nextFireAt: fires[due.length] ?? null };
  // Further behind than the cap: the last fire time before now is looked for near now.
  const fireAt = lastFireAtOrBefore(cron, timeZone, due[MAX_MISSED_COUNTED - 1]!, now);
  return { fireAt, missed: MAX_MISSED_COUNTED, nextFireAt: nextFireTimes(cron, timeZone, fireAt, 1)[0] ?? null };
}

/** Fire times looked at per step of a window. */
const WINDOW_STEP = 100;

/** The latest fire time in (after, now], looked for in windows before `now` that grow until one holds a fire time. */
function lastFireAtOrBefore(cron: ParsedCron, timeZone: string, after: number, now: number): number {
  for (const windowMs of [60_000, 3_600_000, 86_400_000, 32 * 86_400_000, 367 * 86_400_000]) {
    let from = Math.max(after, now - windowMs);
    let last: number | null = null;
    for (;;) {
      const fires = nextFireTimes(cron, timeZone, from, WINDOW_STEP).filter((instant) => instant <= now);
      if (fires.length === 0) break;
      last = fires[fires.length - 1]!;
      if (fires.length < WINDOW_STEP) break;
      from = last;
    }
    if (last !== null) return last;
  }
  return after;
}
