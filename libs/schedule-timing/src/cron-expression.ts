// Standard five-field cron (minute hour day-of-month month day-of-week), or six fields
// with seconds first (`*/5 * * * * *`), the form Vixie-cron descendants with seconds use.
// Quartz extensions (`?`, `L`, `W`, `#`, a year field) and `a/n` without a range are
// refused rather than guessed at.

interface CronField {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  /** Names accepted in place of numbers, case-insensitively; the first one stands for `min`. */
  readonly names?: readonly string[];
}

const SECOND_FIELD: CronField = { name: 'second', min: 0, max: 59 };

const CRON_FIELDS: readonly CronField[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
  },
  // 0 and 7 are both Sunday.
  { name: 'day of week', min: 0, max: 7, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

const CRON_MACROS: ReadonlyMap<string, string> = new Map([
  ['@yearly', '0 0 1 1 *'],
  ['@annually', '0 0 1 1 *'],
  ['@monthly', '0 0 1 * *'],
  ['@weekly', '0 0 * * 0'],
  ['@daily', '0 0 * * *'],
  ['@midnight', '0 0 * * *'],
  ['@hourly', '0 * * * *'],
]);

/** A valid expression as the values each field allows; day of week 7 is folded into 0. */
export interface ParsedCron {
  seconds: readonly number[];
  minutes: readonly number[];
  hours: readonly number[];
  daysOfMonth: readonly number[];
  months: readonly number[];
  daysOfWeek: readonly number[];
  /** Whether the day fields were written as `*`: cron matches either day field when both are restricted. */
  anyDayOfMonth: boolean;
  anyDayOfWeek: boolean;
  /** Whether the expression names seconds (six fields). */
  hasSeconds: boolean;
}

const DIGITS = /^[0-9]+$/;
const MAX_SHOWN_LENGTH = 40;
const MAX_CRON_LENGTH = 256;

const shown = (text: string) =>
  JSON.stringify(text.length > MAX_SHOWN_LENGTH ? `${text.slice(0, MAX_SHOWN_LENGTH)}…` : text);

/**
 * Why `expression` is not a valid cron expression, as a clause that completes
 * "… is not valid: <reason>", or null when it is valid.
 */
export function cronExpressionProblem(expression: string): string | null {
  const parsed = parseCronExpression(expression);
  return typeof parsed === 'string' ? parsed : null;
}

/** The values each field of `expression` allows, or why it is not valid (as `cronExpressionProblem`). */
export function parseCronExpression(expression: string): ParsedCron | string {
  // A real expression is short; the bound also keeps the work below small for any input.
  if (expression.length > MAX_CRON_LENGTH) return `it is longer than ${MAX_CRON_LENGTH} characters`;
  // Only spaces and tabs separate fields; a line break stays inside a field and is refused.
  const trimmed = expression.replace(/^[ \t]+|[ \t]+$/g, '');
  if (trimmed.startsWith('@')) {
    const expansion = CRON_MACROS.get(trimmed);
    return expansion === undefined ? `${shown(trimmed)} is not one of ${[...CRON_MACROS.keys()].join(', ')}` : parseCronExpression(expansion);
  }
  const fields = trimmed.split(/[ \t]+/).filter((field) => field.length > 0);
  const hasSeconds = fields.length === CRON_FIELDS.length + 1;
  if (fields.length !== CRON_FIELDS.length && !hasSeconds) {
    return `it has ${fields.length} fields, but needs 5 (minute hour day-of-month month day-of-week) or 6 (second first)`;
  }
  const layout = hasSeconds ? [SECOND_FIELD, ...CRON_FIELDS] : CRON_FIELDS;
  const values: number[][] = [];
  for (let index = 0; index < layout.length; index += 1) {
    const allowed = fieldValues(fields[index]!, layout[index]!);
    if (typeof allowed === 'string') return allowed;
    values.push(allowed);
  }
  const [seconds, minutes, hours, daysOfMonth, months, daysOfWeek] = hasSeconds ? values : [[0], ...values];
  const dayFields = hasSeconds ? fields.slice(3) : fields.slice(2);
  return {
    seconds: seconds!,
    minutes: minutes!,
    hours: hours!,
    daysOfMonth: daysOfMonth!,
    months: months!,
    daysOfWeek: [...new Set(daysOfWeek!.map((day) => day % 7))].sort((a, b) => a - b),
    anyDayOfMonth: dayFields[0]!.startsWith('*'),
    anyDayOfWeek: dayFields[2]!.startsWith('*'),
    hasSeconds,
  };
}

/** The sorted values a field allows, or the problem with it. */
function fieldValues(text: string, field: CronField): number[] | string {
  const problem = fieldProblem(text, field);
  if (problem !== null) return problem;
  const allowed = new Set<number>();
  for (const item of text.split(',')) {
    const [range, step] = item.split('/') as [string, string | undefined];
    const [low, high] =
      range === '*'
        ? [field.min, field.max]
        : (() => {
            const bounds = range.split('-').map((bound) => fieldValue(bound, field) as number);
            // "a/n" is refused above, so a single value has no step.
            return [bounds[0]!, bounds[1] ?? bounds[0]!];
          })();
    for (let value = low; value <= high; value += Number(step ?? 1)) allowed.add(value);
  }
  return [...allowed].sort((a, b) => a - b);
}

function fieldProblem(text: string, field: CronField): string | null {
  for (const item of text.split(',')) {
    if (item.length === 0) return `the ${field.name} field ${shown(text)} has an empty list item`;
    const problem = itemProblem(item, field);
    if (problem !== null) return problem;
  }
  return null;
}

/** One list item: "*", a value "a" or a range "a-b"; "*" and ranges may end in a step "/n". */
function itemProblem(item: string, field: CronField): string | null {
  const parts = item.split('/');
  if (parts.length > 2) return `the ${field.name} item ${shown(item)} has more than one "/"`;
  const [range, step] = parts as [string, string | undefined];

  if (step !== undefined) {
    const span = field.max - field.min + 1;
    if (!DIGITS.test(step) || Number(step) < 1 || Number(step) > span) {
      return `the ${field.name} step ${shown(step)} must be a whole number from 1 to ${span}`;
    }
    if (range !== '*' && !range.includes('-')) {
      return `the ${field.name} item ${shown(item)} needs "*" or a range "a-b" before "/"`;
    }
  }
  if (range === '*') return null;

  const bounds = range.split('-');
  if (bounds.length > 2) return `the ${field.name} range ${shown(range)} has more than one "-"`;
  if (bounds.includes('')) return `the ${field.name} item ${shown(range)} is missing a value`;
  const values: number[] = [];
  for (const bound of bounds) {
    const value = fieldValue(bound, field);
    if (typeof value === 'string') return value;
    values.push(value);
  }
  const [low, high] = values as [number, number | undefined];
  if (high !== undefined && low > high) {
    return `the ${field.name} range ${shown(range)} runs backwards`;
  }
  return null;
}

/** The number `text` stands for in `field`, or the problem with it. */
function fieldValue(text: string, field: CronField): number | string {
  if (DIGITS.test(text)) {
    const value = Number(text);
    if (value < field.min || value > field.max) {
      return `${field.name} ${shown(text)} is out of range ${field.min}-${field.max}`;
    }
    return value;
  }
  const nameIndex = field.names?.indexOf(text.toUpperCase()) ?? -1;
  if (nameIndex >= 0) return field.min + nameIndex;
  const accepted =
    field.names === undefined
      ? `a number from ${field.min} to ${field.max}`
      : `a number from ${field.min} to ${field.max} or a name such as ${field.names[0]}`;
  return `${field.name} ${shown(text)} is not ${accepted}`;
}
