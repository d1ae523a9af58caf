import type { ParsedCron } from './cron-expression.ts';
import { firstInstantAfterWallTime, formatWallTime, instantsOfWallTime, offsetAt, wallTimeAt } from './zoned-time.ts';

// When a schedule fires, by the rule docs/design.md#schedules-pause-and-resume sets for clock
// changes: a wall time the clocks skip (spring forward) fires once, at the first instant
// after the jump; a wall time that occurs twice (fall back) fires once, at its first
// occurrence.

const SECOND_MS = 1000;
const DAY_MS = 86_400_000;
/** How far ahead a search looks; an expression that matches nothing in it ("0 0 30 2 *") has no fire time. */
const SEARCH_DAYS = 5 * 366;

/** Whether the cron allows the day of `wallTime` (its date part). */
function dayMatches(cron: ParsedCron, wallTime: number): boolean {
  const date = new Date(wallTime);
  if (!cron.months.includes(date.getUTCMonth() + 1)) return false;
  const dayOfMonth = cron.daysOfMonth.includes(date.getUTCDate());
  const dayOfWeek = cron.daysOfWeek.includes(date.getUTCDay());
  // Cron's day rule: when both day fields are restricted, either one matching is enough.
  return cron.anyDayOfMonth || cron.anyDayOfWeek ? dayOfMonth && dayOfWeek : dayOfMonth || dayOfWeek;
}

/** The wall times the cron matches from `fromWallTime` on (inclusive), in order, lazily. */
function* matchingWallTimes(cron: ParsedCron, fromWallTime: number, toWallTime: number): Generator<number> {
  const firstDay = Math.floor(fromWallTime / DAY_MS) * DAY_MS;
  for (let day = firstDay; day <= toWallTime; day += DAY_MS) {
    if (!dayMatches(cron, day)) continue;
    for (const hour of cron.hours) {
      for (const minute of cron.minutes) {
        const minuteStart = day + hour * 3_600_000 + minute * 60_000;
        if (minuteStart + 60_000 <= fromWallTime) continue;
        for (const second of cron.seconds) {
          const wallTime = minuteStart + second * SECOND_MS;
          if (wallTime < fromWallTime) continue;
          if (wallTime > toWallTime) return;
          yield wallTime;
        }
      }
    }
  }
}

/** The instant a matching wall time fires at, by the clock-change rule above. */
function fireInstantOf(wallTime: number, timeZone: string): number {
  const instants = instantsOfWallTime(wallTime, timeZone);
  return instants.length > 0 ? instants[0]! : firstInstantAfterWallTime(wallTime, timeZone);
}

/** The next `count` instants (ms since the epoch, ascending) after `after` at which the schedule fires. */
export function nextFireTimes(cron: ParsedCron, timeZone: string, after: number, count: number): number[] {
  const fires: number[] = [];
  // Start two hours of wall time early: after a fall-back, `after`'s wall time may lie in
  // the repeated hour whose first occurrence is already past.
  const from = wallTimeAt(after, timeZone) - 2 * 3_600_000;
  // No wall time fires later than itself minus the zone's least offset around `after` (a
  // skipped one fires at the jump, earlier still): those that cannot be after `after` are
  // passed over without asking the zone data, which is what a tick's cost was made of.
  const leastOffset = Math.min(offsetAt(after - DAY_MS, timeZone), offsetAt(after, timeZone), offsetAt(after + DAY_MS, timeZone));
  for (const wallTime of matchingWallTimes(cron, from, from + SEARCH_DAYS * DAY_MS)) {
    if (wallTime - leastOffset <= after) continue;
    const instant = fireInstantOf(wallTime, timeZone);
    // Several skipped wall times fire at the same instant after the jump, once.
    if (instant <= after || instant === fires.at(-1)) continue;
    fires.push(instant);
    if (fires.length === count) break;
  }
  return fires;
}

/**
 * The key of the scheduled tick that fired at `instant`: its wall time in the schedule's
 * zone. Both occurrences of a repeated wall time share it, so the second one is refused
 * as a repeat, and so is a retried start of the same tick.
 */
export function tickKeyOf(instant: number, timeZone: string): string {
  return formatWallTime(wallTimeAt(instant, timeZone));
}
