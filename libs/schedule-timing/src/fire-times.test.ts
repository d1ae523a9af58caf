import { describe, expect, it } from 'vitest';
import { parseCronExpression, type ParsedCron } from './cron-expression.ts';
import { nextFireTimes, tickKeyOf } from './fire-times.ts';

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

describe('tickKeyOf', () => {
  it('gives both occurrences of a repeated wall time one key', () => {
    const first = tickKeyOf(Date.parse('2026-11-01T05:30:00Z'), 'America/New_York');
    expect(first).toBe('2026-11-01T01:30:00');
    expect(tickKeyOf(Date.parse('2026-11-01T06:30:00Z'), 'America/New_York')).toBe(first);
    expect(tickKeyOf(Date.parse('2026-11-01T07:30:00Z'), 'America/New_York')).toBe('2026-11-01T02:30:00');
  });
});

describe('the UTC zones', () => {
  it('have the wall time Intl gives them, read without asking Intl', () => {
    const intlWallTime = (instant: number, timeZone: string) =>
      new Intl.DateTimeFormat('sv-SE', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' })
        .format(new Date(instant))
        .replace(' ', 'T');
    for (const timeZone of ['UTC', 'Etc/UTC', 'Etc/UCT', 'Etc/Zulu', 'Etc/GMT', 'GMT', 'Zulu', 'UCT', 'Universal', 'Etc/Universal']) {
      for (const instant of [Date.UTC(2026, 2, 8, 7, 0, 0), Date.UTC(2026, 9, 25, 1, 30, 59, 999), Date.UTC(2024, 1, 29, 23, 59, 59)]) {
        expect(tickKeyOf(instant, timeZone)).toBe(intlWallTime(instant, timeZone));
      }
    }
  });
});
