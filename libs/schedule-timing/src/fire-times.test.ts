import { describe, expect, it } from 'vitest';
import { parseCronExpression, type ParsedCron } from './cron-expression.ts';
import { fallBackFires, isDroppedTick, nextFireTimes, springForwardFires, tickKeyOf } from './fire-times.ts';

// Expected instants are written out by hand from the 2026 transitions: New York 07:00Z on
// 8 March (02:00 EST -> 03:00 EDT) and 06:00Z on 1 November (02:00 EDT -> 01:00 EST);
// Berlin 01:00Z on 29 March (02:00 CET -> 03:00 CEST) and 25 October (03:00 CEST -> 02:00 CET).

const cron = (expression: string) => parseCronExpression(expression) as ParsedCron;
const next = (expression: string, timeZone: string, after: string, count: number) =>
  nextFireTimes(cron(expression), timeZone, Date.parse(after), count).map((instant) => new Date(instant).toISOString());

describe('nextFireTimes', () => {
  it.each([
    ['30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', ['2026-03-07T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z']],
    ['30 1 * * *', 'America/New_York', '2026-10-31T00:00:00Z', ['2026-10-31T05:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']],
    ['30 2 * * *', 'Europe/Berlin', '2026-03-28T00:00:00Z', ['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']],
    ['30 2 * * *', 'Europe/Berlin', '2026-10-24T00:00:00Z', ['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']],
  ])('%s in %s after %s fires once per day across the transition', (expression, timeZone, after, expected) => {
    expect(next(expression, timeZone, after, 3)).toEqual(expected);
  });

  it('fires a repeated half hour once, at its first occurrence', () => {
    expect(next('*/30 * * * *', 'America/New_York', '2026-11-01T03:59:59Z', 6)).toEqual([
      '2026-11-01T04:00:00.000Z',
      '2026-11-01T04:30:00.000Z',
      '2026-11-01T05:00:00.000Z',
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T07:00:00.000Z',
      '2026-11-01T07:30:00.000Z',
    ]);
  });

  it('fires the skipped wall times of a gap once, at the jump', () => {
    expect(next('*/20 2,3 8 3 *', 'America/New_York', '2026-03-08T00:00:00Z', 3)).toEqual([
      '2026-03-08T07:00:00.000Z',
      '2026-03-08T07:20:00.000Z',
      '2026-03-08T07:40:00.000Z',
    ]);
  });

  it('does not fire again in the repeated hour when asked from inside it', () => {
    expect(next('30 1 * * *', 'America/New_York', '2026-11-01T06:10:00Z', 1)).toEqual(['2026-11-02T06:30:00.000Z']);
  });

  it('steps through seconds and follows the day-of-month or day-of-week rule', () => {
    expect(next('*/20 * * * * *', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-01T00:00:20.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:01:00.000Z',
    ]);
    // Both day fields restricted: the 13th of any month or any Friday.
    expect(next('0 0 13 * FRI', 'UTC', '2026-02-01T00:00:00Z', 3)).toEqual([
      '2026-02-06T00:00:00.000Z',
      '2026-02-13T00:00:00.000Z',
      '2026-02-20T00:00:00.000Z',
    ]);
  });

  it('answers nothing for an expression that never matches', () => {
    expect(next('0 0 30 2 *', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual([]);
  });
});

describe('springForwardFires', () => {
  const year = [Date.parse('2026-01-01T00:00:00Z'), Date.parse('2027-01-01T00:00:00Z')] as const;
  it('lists the jumps at which a skipped wall time fires', () => {
    expect(springForwardFires(cron('30 2 * * *'), 'America/New_York', ...year).map((instant) => new Date(instant).toISOString())).toEqual([
      '2026-03-08T07:00:00.000Z',
    ]);
    expect(springForwardFires(cron('30 2 * * *'), 'Europe/Berlin', ...year).map((instant) => new Date(instant).toISOString())).toEqual([
      '2026-03-29T01:00:00.000Z',
    ]);
  });

  it('lists nothing when no matching wall time is skipped', () => {
    expect(springForwardFires(cron('0 12 * * *'), 'America/New_York', ...year)).toEqual([]);
    expect(springForwardFires(cron('30 2 * * *'), 'UTC', ...year)).toEqual([]);
  });
});

describe('fallBackFires', () => {
  const year = [Date.parse('2026-01-01T00:00:00Z'), Date.parse('2027-01-01T00:00:00Z')] as const;
  const iso = (instants: number[]) => instants.map((instant) => new Date(instant).toISOString());

  it('lists the first occurrences that Temporal, resolving wall times as Go does, puts at the second (east of UTC)', () => {
    expect(iso(fallBackFires(cron('30 2 * * *'), 'Europe/Berlin', ...year))).toEqual(['2026-10-25T00:30:00.000Z']);
    expect(iso(fallBackFires(cron('*/20 2 25 10 *'), 'Europe/Berlin', ...year))).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:20:00.000Z',
      '2026-10-25T00:40:00.000Z',
    ]);
  });

  it('lists nothing where Go already resolves to the first occurrence (west of UTC) or nothing repeats', () => {
    expect(fallBackFires(cron('30 1 * * *'), 'America/New_York', ...year)).toEqual([]);
    expect(fallBackFires(cron('30 3 * * *'), 'Europe/Berlin', ...year)).toEqual([]);
    expect(fallBackFires(cron('30 2 * * *'), 'UTC', ...year)).toEqual([]);
  });

  it('keeps a spec small for a cron that matches every second of the repeated hour', () => {
    expect(fallBackFires(cron('* * 2 * * *'), 'Europe/Berlin', ...year)).toHaveLength(200);
  });
});

describe('isDroppedTick', () => {
  const dropped = (expression: string, timeZone: string, instant: string) => isDroppedTick(cron(expression), timeZone, Date.parse(instant));

  it('drops the second occurrence of a repeated wall time and keeps the first', () => {
    expect(dropped('30 2 * * *', 'Europe/Berlin', '2026-10-25T00:30:00Z')).toBe(false);
    expect(dropped('30 2 * * *', 'Europe/Berlin', '2026-10-25T01:30:00Z')).toBe(true);
    expect(dropped('30 1 * * *', 'America/New_York', '2026-11-01T05:30:00Z')).toBe(false);
    expect(dropped('30 1 * * *', 'America/New_York', '2026-11-01T06:30:00Z')).toBe(true);
  });

  it('drops a tick in a repeated hour whose wall time the cron does not match (Temporal carrying the hour before)', () => {
    // Berlin's 02:30 CEST, matched by Temporal through "30 1" and its retry of hour 1 an hour on.
    expect(dropped('30 1 * * *', 'Europe/Berlin', '2026-10-25T00:30:00Z')).toBe(true);
  });

  it('keeps every tick outside repeated hours, a trigger at any time included', () => {
    expect(dropped('30 2 * * *', 'Europe/Berlin', '2026-10-26T01:30:00Z')).toBe(false);
    expect(dropped('30 2 * * *', 'Europe/Berlin', '2026-06-01T12:34:56Z')).toBe(false);
    expect(dropped('30 2 * * *', 'Europe/Berlin', '2026-03-29T01:00:00Z')).toBe(false);
  });
});

describe('tickKeyOf', () => {
  it('gives both occurrences of a repeated wall time one key', () => {
    const first = tickKeyOf(Date.parse('2026-11-01T05:30:00Z'), 'America/New_York');
    expect(first).toBe('2026-11-01T01:30:00');
    expect(tickKeyOf(Date.parse('2026-11-01T06:30:00Z'), 'America/New_York')).toBe(first);
    expect(tickKeyOf(Date.parse('2026-11-01T07:30:00Z'), 'America/New_York')).toBe('2026-11-01T02:30:00');
  });
});
