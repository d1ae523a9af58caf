// Wall-clock time in an IANA time zone, from the runtime's own zone data (Intl): pure and
// deterministic for a given Node build. A "wall time" is a local date and time written as
// milliseconds as if it were UTC, so that its arithmetic is plain numbers.

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Zones that are UTC itself: their wall time is the instant, with no zone data to ask. */
const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'Etc/UCT', 'Etc/Zulu', 'Etc/GMT', 'GMT', 'Zulu', 'UCT', 'Universal', 'Etc/Universal']);

/** The wall time in `timeZone` at `instant` (whole seconds). */
export function wallTimeAt(instant: number, timeZone: string): number {
  if (UTC_ZONES.has(timeZone)) return Math.floor(instant / 1000) * 1000;
  const parts: Record<string, number> = {};
  for (const part of formatterFor(timeZone).formatToParts(new Date(Math.floor(instant / 1000) * 1000))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  return Date.UTC(parts['year']!, parts['month']! - 1, parts['day']!, parts['hour']!, parts['minute']!, parts['second']!);
}

/** How far the zone's clocks are ahead of UTC at `instant`, in milliseconds. */
export function offsetAt(instant: number, timeZone: string): number {
  return wallTimeAt(instant, timeZone) - Math.floor(instant / 1000) * 1000;
}

/**
 * Every instant whose wall time in `timeZone` is `wallTime`, earliest first: one on an
 * ordinary day, two in the hour clocks repeat, none in the hour they skip.
 */
export function instantsOfWallTime(wallTime: number, timeZone: string): number[] {
  // The offsets a day either side cover both sides of any transition near `wallTime`.
  const offsets = new Set([offsetAt(wallTime - DAY_MS, timeZone), offsetAt(wallTime, timeZone), offsetAt(wallTime + DAY_MS, timeZone)]);
  const instants = [...offsets].map((offset) => wallTime - offset).filter((instant) => wallTimeAt(instant, timeZone) === wallTime);
  return [...new Set(instants)].sort((a, b) => a - b);
}

/**
 * The first instant whose wall time is later than `wallTime`, for a wall time clocks skip:
 * the moment the clocks jump forward.
 */
export function firstInstantAfterWallTime(wallTime: number, timeZone: string): number {
  // Zones are at most 14 hours from UTC either way; bisect whole seconds between the bounds.
  let low = Math.floor((wallTime - 15 * HOUR_MS) / 1000);
  let high = Math.ceil((wallTime + 15 * HOUR_MS) / 1000);
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (wallTimeAt(middle * 1000, timeZone) > wallTime) high = middle;
    else low = middle;
  }
  return high * 1000;
}

/** `2026-03-08T03:00:00`: a wall time as ISO 8601 without a zone. */
export function formatWallTime(wallTime: number): string {
  return new Date(wallTime).toISOString().slice(0, 19);
}
