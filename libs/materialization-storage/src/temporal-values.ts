// Timestamps are stored as microseconds since the epoch (UTC) and dates as days since the
// epoch. Parsing is done here, with calendar arithmetic rather than `Date.parse`, because
// `Date.parse` accepts many non-ISO forms, reads an offset-less time as local time, maps
// years 0-99 to 1900-1999 in `Date.UTC`, and drops digits past the millisecond.

const MS_PER_DAY = 86_400_000;
/** The range of a JavaScript `Date`, in seconds (±100,000,000 days around the epoch). */
const MAX_EPOCH_SECONDS = 8_640_000_000_000;

const DATE_RE = /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})$/;

/** A parsed instant: whole seconds since the epoch and the microseconds within that second. */
export interface EpochInstant {
  seconds: number;
  micros: number;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** Epoch days of the year/month/day groups of a match, or undefined when not a real date. */
function daysOfMatch(yearText: string, monthText: string, dayText: string): number | undefined {
  if (yearText === '-000000') return undefined; // ISO 8601 has no negative zero year
  const year = Number(yearText);
  const month = Number(monthText);
  const day = Number(dayText);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  return daysFromCivil(year, month, day);
}

const ZERO = 48;

/** The value of `count` decimal digits at `at`, or -1 when any is not a digit. */
function digitsAt(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const digit = text.charCodeAt(i) - ZERO;
    if (!(digit >= 0 && digit <= 9)) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/**
 * Parses an ISO 8601 / RFC 3339 date-time with a UTC offset (`Z`, `±hh`, `±hh:mm` or
 * `±hhmm`): `2024-05-01T12:30:00Z`, `2024-05-01 12:30:00.123456+02:00`; seconds may be
 * left out. A time without an offset is refused, since it names no instant. Digits past
 * the microsecond are dropped. Hand-written rather than a regular expression: it runs
 * once per cell and is several times faster.
 */
export function parseTimestamp(text: string): EpochInstant | undefined {
  const length = text.length;
  // Year: four digits, or a sign and six (ISO 8601 expanded years, as `toISOString` writes them).
  let at = 0;
  let year: number;
  const first = text.charCodeAt(0);
  if (first === 43 /* + */ || first === 45 /* - */) {
    year = digitsAt(text, 1, 6);
    if (year < 0 || (year === 0 && first === 45)) return undefined;
    if (first === 45) year = -year;
    at = 7;
  } else {
    year = digitsAt(text, 0, 4);
    if (year < 0) return undefined;
    at = 4;
  }
  if (length < at + 12 || text.charCodeAt(at) !== 45 || text.charCodeAt(at + 3) !== 45 || text.charCodeAt(at + 9) !== 58) return undefined;
  const month = digitsAt(text, at + 1, 2);
  const day = digitsAt(text, at + 4, 2);
  const separator = text.charCodeAt(at + 6);
  if (separator !== 84 /* T */ && separator !== 116 /* t */ && separator !== 32 /* space */) return undefined;
  const hour = digitsAt(text, at + 7, 2);
  const minute = digitsAt(text, at + 10, 2);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour < 0 || hour > 23 || minute < 0 || minute > 59) {
    return undefined;
  }
  at += 12;
  let second = 0;
  let micros = 0;
  if (text.charCodeAt(at) === 58 /* : */) {
    second = digitsAt(text, at + 1, 2);
    if (second < 0 || second > 59) return undefined;
    at += 3;
    const mark = text.charCodeAt(at);
    if (mark === 46 /* . */ || mark === 44 /* , */) {
      const start = ++at;
      while (at < length) {
        const digit = text.charCodeAt(at) - ZERO;
        if (!(digit >= 0 && digit <= 9)) break;
        if (at - start < 6) micros = micros * 10 + digit;
        at++;
      }
      if (at === start) return undefined;
      for (let place = at - start; place < 6; place++) micros *= 10;
    }
  }
  let offsetSeconds: number;
  const zone = text.charCodeAt(at);
  if (zone === 90 /* Z */ || zone === 122 /* z */) {
    if (at + 1 !== length) return undefined;
    offsetSeconds = 0;
  } else if (zone === 43 /* + */ || zone === 45 /* - */) {
    const offsetHours = digitsAt(text, at + 1, 2);
    let offsetMinutes = 0;
    const rest = length - (at + 3);
    if (rest === 3 && text.charCodeAt(at + 3) === 58) offsetMinutes = digitsAt(text, at + 4, 2);
    else if (rest === 2) offsetMinutes = digitsAt(text, at + 3, 2);
    else if (rest !== 0) return undefined;
    if (offsetHours < 0 || offsetHours > 23 || offsetMinutes < 0 || offsetMinutes > 59) return undefined;
    offsetSeconds = (zone === 45 ? -1 : 1) * (offsetHours * 3600 + offsetMinutes * 60);
  } else {
    return undefined;
  }
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds;
  if (Math.abs(seconds) > MAX_EPOCH_SECONDS) return undefined;
  return { seconds, micros };
}

/** Microseconds since the epoch of a valid `Date` or a string `parseTimestamp` accepts. */
export function timestampToMicros(value: Date | string): bigint {
  if (typeof value !== 'string') return BigInt(value.getTime()) * 1000n;
  const instant = parseTimestamp(value);
  if (instant === undefined) throw new RangeError(`Not an ISO 8601 timestamp with an offset: ${JSON.stringify(value)}`);
  return BigInt(instant.seconds) * 1_000_000n + BigInt(instant.micros);
}

/**
 * The ISO 8601 UTC form of an instant in microseconds: `2024-05-01T10:30:00.123Z`, with
 * three more fraction digits (`.123456Z`) when the microseconds are not zero.
 */
export function formatTimestampMicros(micros: bigint): string {
  let millis = micros / 1000n;
  let rest = micros % 1000n;
  if (rest < 0n) {
    rest += 1000n;
    millis -= 1n;
  }
  const iso = new Date(Number(millis)).toISOString();
  return rest === 0n ? iso : `${iso.slice(0, -1)}${rest.toString().padStart(3, '0')}Z`;
}

/** Epoch days of a `YYYY-MM-DD` string that names a real calendar day. */
export function parseDate(text: string): number | undefined {
  const match = DATE_RE.exec(text);
  if (match === null) return undefined;
  const days = daysOfMatch(match[1]!, match[2]!, match[3]!);
  return days !== undefined && Math.abs(days) <= MAX_EPOCH_SECONDS / 86_400 ? days : undefined;
}

/** Whether a `Date` stands for a calendar day: valid and exactly at midnight UTC. */
export function isMidnightUtc(value: Date): boolean {
  const time = value.getTime();
  return Number.isFinite(time) && time % MS_PER_DAY === 0;
}

/** Epoch days of a `Date` at midnight UTC or of a `YYYY-MM-DD` string. */
export function dateToDays(value: Date | string): number {
  if (typeof value !== 'string') {
    if (!isMidnightUtc(value)) throw new RangeError(`Not a Date at midnight UTC: ${String(value)}`);
    return value.getTime() / MS_PER_DAY;
  }
  const days = parseDate(value);
  if (days === undefined) throw new RangeError(`Not a YYYY-MM-DD date: ${JSON.stringify(value)}`);
  return days;
}

/** `YYYY-MM-DD` of an epoch day (a signed six-digit year outside 0000-9999, as ISO 8601 extends). */
export function formatDateDays(days: number): string {
  const iso = new Date(days * MS_PER_DAY).toISOString();
  return iso.slice(0, iso.indexOf('T'));
}
