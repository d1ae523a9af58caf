import type { CalendarSpec, ScheduleSpec } from '@temporalio/client';
import type { ScheduleDefinition } from '@envengine/contracts';
import { parseCronExpression, springForwardFires, wallTimeAt, type ParsedCron } from '@envengine/schedule-timing';


/** How far ahead the one-off spring-forward fires are written into a schedule's spec; each activation renews them. */
export const SPRING_FORWARD_HORIZON_DAYS = 800;
const DAY_MS = 86_400_000;
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
 * plus one-off calendar entries at the spring-forward jumps where a matching wall time is
 * skipped, because Temporal's matching skips those times while our rule fires them once
 * after the jump. Temporal reads a six-field cron as ending in a year, so our seconds-first
 * six fields are given as seven (`… *`).
 */
export function temporalSpecOf(definition: ScheduleDefinition, now: number): ScheduleSpec {
  const cron = parsedCronOf(definition);
  const expression = definition.cron.trim();
  const springForward = springForwardFires(cron, definition.timezone, now, now + SPRING_FORWARD_HORIZON_DAYS * DAY_MS);
  return {
    cronExpressions: [cron.hasSeconds ? `${expression} *` : expression],
    calendars: springForward.map((instant) => calendarAt(wallTimeAt(instant, definition.timezone))),
    timezone: definition.timezone,
  };
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
