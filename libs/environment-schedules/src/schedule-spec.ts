import type { CalendarSpec, IntervalSpec, ScheduleSpec } from '@temporalio/client';
import type { ScheduleDefinition } from '@envengine/contracts';
import { fallBackFires, parseCronExpression, springForwardFires, wallTimeAt, type ParsedCron } from '@envengine/schedule-timing';


const DAY_MS = 86_400_000;

/** How far ahead the one-off clock-change fires are written into a schedule's spec; each activation renews them. */
export const CLOCK_CHANGE_HORIZON_DAYS = 800;
export const SPRING_FORWARD_COMMENT = 'spring-forward: a skipped wall time fires once after the jump';

const MONTHS = [
  'JANUARY', 'FEBRUARY', 'MARCH', 'APRIL', 'MAY', 'JUNE', 'JULY', 'AUGUST', 'SEPTEMBER', 'OCTOBER', 'NOVEMBER', 'DECEMBER',
] as const;

/** Temporal `DescribeSchedule` id: `sched-<environment id>-<schedule name>` (DESIGN.md §5). */
export const scheduleIdOf = (environmentId: string, name: string) => `sched-${environmentId}-${name}`;

export function parsedCronOf(definition: Pick<ScheduleDefinition, 'cron'>): ParsedCron {
  const parsed = parseCronExpression(definition.cron);
  // Validation refused a bad expression before the deployment could be activated.
  if (typeof parsed === 'string') throw new Error(`cron ${JSON.stringify(definition.cron)} is not valid: ${parsed}`);
  return parsed;
}

/**
 * Temporal's spec for a schedule: the cron in its zone (shown as such in the Temporal UI),
 * plus one-off entries where Temporal's matching departs from our clock-change rule:
 * calendar entries at the spring-forward jumps where a matching wall time is skipped
 * (Temporal skips those times; we fire them once after the jump), and intervals at the
 * first occurrences of repeated wall times that Temporal puts at the second occurrence
 * (its second-occurrence ticks are then dropped: `isDroppedTick`). Temporal reads a
 * six-field cron as ending in a year, so our seconds-first six fields are given as seven
 * (`… *`).
 */
export function temporalSpecOf(definition: ScheduleDefinition, now: number): ScheduleSpec {
  const cron = parsedCronOf(definition);
  const expression = definition.cron.trim();
  const horizon = now + CLOCK_CHANGE_HORIZON_DAYS * DAY_MS;
  const springForward = springForwardFires(cron, definition.timezone, now, horizon);
  const fallBack = fallBackFires(cron, definition.timezone, now, horizon);
  return {
    cronExpressions: [cron.hasSeconds ? `${expression} *` : expression],
    calendars: springForward.map((instant) => calendarAt(wallTimeAt(instant, definition.timezone))),
    intervals: fallBack.map(oneOffAt),
    timezone: definition.timezone,
  };
}

/**
 * A one-off at an instant. Temporal's calendars are read in the schedule's zone, where a
 * repeated wall time's first occurrence cannot be named; an interval counts from the Unix
 * epoch. Temporal takes an interval's next time after t as (t div every + 1) * every, so
 * "every <instant since the epoch>" fires at the instant, and next at twice it, decades on
 * (renewed by every activation long before).
 */
function oneOffAt(instant: number): IntervalSpec {
  return { every: instant };
}

function calendarAt(wallTime: number): CalendarSpec {
  const at = new Date(wallTime);
  return {
    year: at.getUTCFullYear(),
    month: MONTHS[at.getUTCMonth()]!,
    dayOfMonth: at.getUTCDate(),
    hour: at.getUTCHours(),
    minute: at.getUTCMinutes(),
    second: at.getUTCSeconds(),
    comment: SPRING_FORWARD_COMMENT,
  };
}
