import type { ParsedCron } from './cron-expression.ts';
import { firstInstantAfterWallTime, formatWallTime, instantsOfWallTime, offsetAt, wallTimeAt } from './zoned-time.ts';

// When a schedule fires, by the rule DESIGN.md §5 sets for clock changes: a wall time the
// clocks skip (spring forward) fires once, at the first instant after the jump; a wall
// time that occurs twice (fall back) fires once, at its first occurrence.

const SECOND_MS = 1000;
const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
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
  for (const wallTime of matchingWallTimes(cron, from, from + SEARCH_DAYS * DAY_MS)) {
    const instant = fireInstantOf(wallTime, timeZone);
    // Several skipped wall times fire at the same instant after the jump, once.
    if (instant <= after || instant === fires.at(-1)) continue;
    fires.push(instant);
    if (fires.length === count) break;
  }
  return fires;
}

/**
 * The instants in [from, to] at which the schedule fires only because of the skipped-time
 * rule: a matching wall time fell in a spring-forward gap. Temporal's calendar matching
 * skips those, so the engine hands them to Temporal as extra one-off times.
 */
export function springForwardFires(cron: ParsedCron, timeZone: string, from: number, to: number): number[] {
  const fires: number[] = [];
  for (const { jump, before, after } of clockChanges(timeZone, from, to)) {
    if (after <= before) continue;
    // Clocks jumped forward: the wall times [jump + before, jump + after) never occur.
    const skipped = matchingWallTimes(cron, jump + before, jump + after - SECOND_MS).next();
    if (!skipped.done && jump >= from && jump <= to) fires.push(jump);
  }
  return fires;
}

/**
 * The zone's offset changes from `from` on, up to a week past `to`: the first instant of
 * the new offset, and the offsets before and after it. Zones change their offset at most
 * a few times a year, never twice in a week: look a week at a time, and bisect only a week
 * whose offset changed.
 */
function* clockChanges(timeZone: string, from: number, to: number): Generator<{ jump: number; before: number; after: number }> {
  for (let instant = from; instant < to; instant += WEEK_MS) {
    const before = offsetAt(instant, timeZone);
    const after = offsetAt(instant + WEEK_MS, timeZone);
    if (after !== before) yield { jump: firstJumpInstant(instant, instant + WEEK_MS, timeZone, before), before, after };
  }
}

/**
 * Where Temporal's server puts a wall time: Go's `time.Date` reads the wall time as UTC,
 * takes the zone's offset there, and keeps it if the result lies in the same offset
 * period, else takes the offset of the result. For a repeated wall time that picks the
 * second occurrence in zones east of UTC (Berlin) and the first west of it (New York).
 */
function goDateInstant(wallTime: number, timeZone: string): number {
  const guessed = offsetAt(wallTime, timeZone);
  const actual = offsetAt(wallTime - guessed, timeZone);
  return wallTime - (actual === guessed ? guessed : actual);
}

/** How many fall-back one-offs one spec carries at most (a per-minute cron in Berlin needs 60 a year), so that a spec stays small. */
const MAX_FALL_BACK_FIRES = 200;

/**
 * The instants in [from, to] at which the schedule fires a repeated wall time's first
 * occurrence (fall back) that Temporal's calendar matching puts at the second one (see
 * `goDateInstant`). The engine hands them to Temporal as extra one-off times; the second
 * occurrence, which Temporal fires as well, is dropped by `isDroppedTick`.
 */
export function fallBackFires(cron: ParsedCron, timeZone: string, from: number, to: number): number[] {
  const fires: number[] = [];
  for (const { jump, before, after } of clockChanges(timeZone, from, to)) {
    if (after >= before) continue;
    // Clocks went back: the wall times [jump + after, jump + before) occur twice.
    for (const wallTime of matchingWallTimes(cron, jump + after, jump + before - SECOND_MS)) {
      const first = wallTime - before;
      if (first < from || first > to || goDateInstant(wallTime, timeZone) === first) continue;
      fires.push(first);
      if (fires.length === MAX_FALL_BACK_FIRES) return fires;
    }
  }
  return fires;
}

/** Whether the cron matches a wall time to the second. */
function matchesWallTime(cron: ParsedCron, wallTime: number): boolean {
  const date = new Date(wallTime);
  return (
    dayMatches(cron, wallTime) &&
    cron.hours.includes(date.getUTCHours()) &&
    cron.minutes.includes(date.getUTCMinutes()) &&
    cron.seconds.includes(date.getUTCSeconds())
  );
}

/**
 * Whether a tick Temporal started at `instant` starts nothing: it lies in a repeated hour
 * and is not the schedule's fire there by the clock-change rule (the second occurrence of
 * a matching wall time, or a time Temporal's carry over the repeated hour matched by the
 * hour before's fields). Ticks anywhere else, a trigger from the Temporal UI included,
 * are Temporal's to decide.
 */
export function isDroppedTick(cron: ParsedCron, timeZone: string, instant: number): boolean {
  const wallTime = wallTimeAt(instant, timeZone);
  const occurrences = instantsOfWallTime(wallTime, timeZone);
  if (occurrences.length < 2) return false;
  return !(matchesWallTime(cron, wallTime) && occurrences[0] === Math.floor(instant / SECOND_MS) * SECOND_MS);
}

/** The first instant in (low, high] whose offset differs from `offset`, by bisection over seconds. */
function firstJumpInstant(low: number, high: number, timeZone: string, offset: number): number {
  let lowSecond = Math.floor(low / SECOND_MS);
  let highSecond = Math.ceil(high / SECOND_MS);
  while (highSecond - lowSecond > 1) {
    const middle = Math.floor((lowSecond + highSecond) / 2);
    if (offsetAt(middle * SECOND_MS, timeZone) !== offset) highSecond = middle;
    else lowSecond = middle;
  }
  return highSecond * SECOND_MS;
}

/**
 * The key of the scheduled tick that fired at `instant`: its wall time in the schedule's
 * zone. Both occurrences of a repeated wall time share it, so the second one is refused
 * as a repeat, and so is a retried start of the same tick.
 */
export function tickKeyOf(instant: number, timeZone: string): string {
  return formatWallTime(wallTimeAt(instant, timeZone));
}
