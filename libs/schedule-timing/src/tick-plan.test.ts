import { describe, expect, it } from 'vitest';
import { parseCronExpression, type ParsedCron } from './cron-expression.ts';
import { nextFireTimes } from './fire-times.ts';
import { MAX_MISSED_COUNTED, planTick } from './tick-plan.ts';

const cron = (expression: string) => parseCronExpression(expression) as ParsedCron;
const at = (iso: string) => Date.parse(iso);
const iso = (instant: number | null) => (instant === null ? null : new Date(instant).toISOString());

/**
 * Ticks a schedule as the tick loop does, from its first fire time after `from`, waking
 * exactly at each stored next fire time, and lists the fire times it ran.
 */
function tickedFrom(expression: string, timeZone: string, from: string, until: string): string[] {
  const parsed = cron(expression);
  const fired: string[] = [];
  let due: number | null = nextFireTimes(parsed, timeZone, at(from), 1)[0] ?? null;
  while (due !== null && due <= at(until)) {
    const plan = planTick(parsed, timeZone, due, due);
    expect(plan.missed).toBe(0);
    fired.push(iso(plan.fireAt)!);
    due = plan.nextFireAt;
  }
  return fired;
}

describe('planTick', () => {
  it('fires the stored time when it is processed on time, and stores the next one', () => {
    const plan = planTick(cron('*/5 * * * *'), 'UTC', at('2026-06-01T10:05:00Z'), at('2026-06-01T10:05:00.300Z'));
    expect({ ...plan, fireAt: iso(plan.fireAt), nextFireAt: iso(plan.nextFireAt) }).toEqual({
      fireAt: '2026-06-01T10:05:00.000Z',
      missed: 0,
      nextFireAt: '2026-06-01T10:10:00.000Z',
    });
  });

  it('after downtime fires the latest missed time once and counts the others missed', () => {
    // Down from 10:04 to 10:21: 10:05, 10:10, 10:15 missed; 10:20 fires (a minute late).
    const plan = planTick(cron('*/5 * * * *'), 'UTC', at('2026-06-01T10:05:00Z'), at('2026-06-01T10:21:00Z'));
    expect({ ...plan, fireAt: iso(plan.fireAt), nextFireAt: iso(plan.nextFireAt) }).toEqual({
      fireAt: '2026-06-01T10:20:00.000Z',
      missed: 3,
      nextFireAt: '2026-06-01T10:25:00.000Z',
    });
  });

  it('counts at most MAX_MISSED_COUNTED and still fires the latest time before now', () => {
    const plan = planTick(cron('* * * * * *'), 'UTC', at('2026-06-01T00:00:00Z'), at('2026-06-03T00:00:00.500Z'));
    expect(plan.missed).toBe(MAX_MISSED_COUNTED);
    expect(iso(plan.fireAt)).toBe('2026-06-03T00:00:00.000Z');
    expect(iso(plan.nextFireAt)).toBe('2026-06-03T00:00:01.000Z');
  });

  it('has no next fire time for a cron that matches nothing later', () => {
    const plan = planTick(cron('0 0 29 2 *'), 'UTC', at('2028-02-29T00:00:00Z'), at('2028-02-29T00:00:01Z'));
    expect(iso(plan.nextFireAt)).toBe('2032-02-29T00:00:00.000Z');
  });

  // The DST fixtures of the previews, through the tick path: the loop wakes at each stored
  // time and plans the tick; the times it runs are the clock-change rule's.
  it.each([
    // Spring forward in New York: 02:30 does not exist on 8 March; it fires once, at the jump (07:00Z).
    ['30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', '2026-03-09T12:00:00Z', ['2026-03-07T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z']],
    // Fall back in New York: 01:30 occurs twice on 1 November; it fires once, at the first (05:30Z).
    ['30 1 * * *', 'America/New_York', '2026-10-31T00:00:00Z', '2026-11-02T12:00:00Z', ['2026-10-31T05:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']],
    // Berlin: 02:30 skipped on 29 March (fires at 01:00Z), repeated on 25 October (fires at the first, 00:30Z).
    ['30 2 * * *', 'Europe/Berlin', '2026-03-28T00:00:00Z', '2026-03-30T12:00:00Z', ['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']],
    ['30 2 * * *', 'Europe/Berlin', '2026-10-24T00:00:00Z', '2026-10-26T12:00:00Z', ['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']],
    // Every half hour through New York's repeated hour: each wall time once.
    ['*/30 * * * *', 'America/New_York', '2026-11-01T03:59:59Z', '2026-11-01T07:30:00Z', [
      '2026-11-01T04:00:00.000Z', '2026-11-01T04:30:00.000Z', '2026-11-01T05:00:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-01T07:00:00.000Z', '2026-11-01T07:30:00.000Z',
    ]],
  ])('%s in %s ticks by the clock-change rule', (expression, timeZone, from, until, expected) => {
    expect(tickedFrom(expression, timeZone, from, until)).toEqual(expected);
  });

  it('a tick planned during a repeated hour (the loop late into it) does not fire the wall time again', () => {
    // Due at the first 01:30 (05:30Z) but processed at the second one (06:30Z): one fire, nothing missed twice.
    const plan = planTick(cron('30 1 * * *'), 'America/New_York', at('2026-11-01T05:30:00Z'), at('2026-11-01T06:30:00Z'));
    expect({ fireAt: iso(plan.fireAt), missed: plan.missed, nextFireAt: iso(plan.nextFireAt) }).toEqual({
      fireAt: '2026-11-01T05:30:00.000Z',
      missed: 0,
      nextFireAt: '2026-11-02T06:30:00.000Z',
    });
  });
});
