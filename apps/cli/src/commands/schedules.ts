import { MAX_NEXT_FIRE_TIMES, PublicApi, type Schedule } from '@envengine/contracts';
import { integerOption, requiredOption, stringOption, type CommandSpec } from '../command-line.ts';
import { ENV_OPTION } from './request-body.ts';

/** `run_created 2026-11-26T02:00:00.000Z`, with what was missed before it and its lateness when it was late. */
function lastTickText(tick: Schedule['last_tick']): string {
  if (!tick) return '-';
  const missed = tick.missed > 0 ? ` (${tick.missed} missed before)` : '';
  const late = tick.outcome === 'late' ? ` ${tick.lateness_seconds.toFixed(0)}s late` : '';
  return `${tick.outcome} ${tick.fire_at}${late}${missed}`;
}

export const scheduleCommands: CommandSpec[] = [
  {
    path: ['schedules', 'list'],
    summary: "list an environment's schedules: cron, zone, paused, next run (UTC), last run, last tick and its outcome, ticks skipped for overlap",
    options: { ...ENV_OPTION },
    async run(ctx, { values }) {
      const env = requiredOption(values, 'env', 'schedules list');
      const { data } = await (await ctx.api()).request(PublicApi.listSchedules, { params: { name: env } });
      ctx.out.data(data, () =>
        ctx.out.table(
          ['NAME', 'JOB', 'CRON', 'TIMEZONE', 'STATE', 'NEXT RUN (UTC)', 'LAST RUN', 'LAST TICK', 'SKIPPED'],
          data.map((schedule) => [
            schedule.name,
            schedule.job,
            schedule.cron,
            schedule.timezone,
            schedule.paused ? { text: 'paused', color: 'yellow' } : 'running',
            schedule.next_run_at ?? '-',
            schedule.last_run_id ?? '-',
            lastTickText(schedule.last_tick),
            String(schedule.skipped_overlap),
          ]),
        ),
      );
    },
  },
  {
    path: ['schedules', 'next'],
    summary: "preview a schedule's next fire times (UTC), by the clock-change rule; --after to look from another instant",
    args: 'SCHEDULE',
    positionals: { min: 1, max: 1 },
    options: {
      ...ENV_OPTION,
      count: { type: 'string', short: 'n', description: `how many (1-${MAX_NEXT_FIRE_TIMES}, default 10)` },
      after: { type: 'string', description: 'an ISO 8601 instant to preview from (default now)' },
    },
    async run(ctx, { values, positionals }) {
      const env = requiredOption(values, 'env', 'schedules next');
      const count = integerOption(values, 'count', { min: 1, max: MAX_NEXT_FIRE_TIMES }) ?? 10;
      const after = stringOption(values, 'after');
      const { data } = await (await ctx.api()).request(PublicApi.nextScheduleFireTimes, { params: { name: env, schedule: positionals[0]! }, query: { count, after } });
      ctx.out.data(data, () => ctx.out.table(['NEXT (UTC)'], data.next.map((instant) => [instant])));
    },
  },
];
