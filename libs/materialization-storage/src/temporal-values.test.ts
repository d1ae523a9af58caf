import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  dateToDays,
  formatDateDays,
  formatTimestampMicros,
  isMidnightUtc,
  parseDate,
  parseTimestamp,
  timestampToMicros,
} from './temporal-values.ts';

/** Microseconds since the epoch as a string, for readable expectations. */
const micros = (text: string) => timestampToMicros(text).toString();

describe('timestamps', () => {
  it.each([
    ['2024-05-01T10:30:00Z', '1714559400000000'],
    ['2024-05-01T10:30:00.5Z', '1714559400500000'],
    ['2024-05-01T10:30:00.123456Z', '1714559400123456'],
    ['2024-05-01T10:30:00.123456789Z', '1714559400123456'],
    ['2024-05-01T10:30:00,25Z', '1714559400250000'],
    ['2024-05-01T10:30Z', '1714559400000000'],
    ['2024-05-01t10:30:00z', '1714559400000000'],
    ['2024-05-01 10:30:00Z', '1714559400000000'],
    ['2024-05-01T12:30:00+02:00', '1714559400000000'],
    ['2024-05-01T12:30:00+0200', '1714559400000000'],
    ['2024-05-01T12:30:00+02', '1714559400000000'],
    ['2024-05-01T05:00:00-05:30', '1714559400000000'],
    ['1969-12-31T23:59:59.999999Z', '-1'],
    ['0099-01-01T00:00:00Z', '-59042995200000000'],
    ['+275760-09-13T00:00:00Z', '8640000000000000000'],
    ['-000001-01-01T00:00:00Z', '-62198755200000000'],
  ])('reads %s as %s µs', (text, expected) => {
    expect(micros(text)).toBe(expected);
  });

  it.each([
    '2024-05-01T10:30:00',
    '2024-05-01',
    '2024-05-01T10:30:00Zjunk',
    ' 2024-05-01T10:30:00Z',
    '2024-05-01T24:00:00Z',
    '2024-05-01T10:60:00Z',
    '2024-05-01T10:30:60Z',
    '2024-05-01T10:30:00.Z',
    '2024-00-01T10:30:00Z',
    '2024-04-31T10:30:00Z',
    '2023-02-29T10:30:00Z',
    '2024-05-01T10:30:00+24:00',
    '2024-05-01T10:30:00+02:60',
    '2024-05-01T10:30:00+2',
    '2024-05-01T10:30:00+02:0',
    '24-05-01T10:30:00Z',
    '-000000-01-01T00:00:00Z',
    '+275760-09-13T00:00:01Z',
    '２０２４-05-01T10:30:00Z',
    '',
  ])('refuses %j', (text) => {
    expect(parseTimestamp(text)).toBeUndefined();
  });

  it('agrees with Date on every instant a Date can hold', () => {
    fc.assert(
      fc.property(fc.date({ noInvalidDate: true }), (date) => {
        expect(timestampToMicros(date.toISOString())).toBe(BigInt(date.getTime()) * 1000n);
        expect(timestampToMicros(date)).toBe(BigInt(date.getTime()) * 1000n);
      }),
    );
  });

  it('formats microseconds back to a string it reads as the same instant', () => {
    const range = 8_640_000_000_000_000_000n;
    fc.assert(
      fc.property(fc.bigInt({ min: -range, max: range }), (value) => {
        expect(timestampToMicros(formatTimestampMicros(value))).toBe(value);
      }),
    );
  });

  it('writes three fraction digits, and six only when the microseconds are not zero', () => {
    expect(formatTimestampMicros(1_714_559_400_123_000n)).toBe('2024-05-01T10:30:00.123Z');
    expect(formatTimestampMicros(1_714_559_400_123_456n)).toBe('2024-05-01T10:30:00.123456Z');
    expect(formatTimestampMicros(-1n)).toBe('1969-12-31T23:59:59.999999Z');
  });
});

describe('dates', () => {
  it('reads YYYY-MM-DD strings and Dates at midnight UTC as epoch days', () => {
    expect(parseDate('1970-01-01')).toBe(0);
    expect(parseDate('2024-02-29')).toBe(19_782);
    expect(parseDate('1969-12-31')).toBe(-1);
    expect(parseDate('0099-03-01')).toBe(-683_309);
    expect(dateToDays(new Date('2024-02-29T00:00:00Z'))).toBe(19_782);
  });

  it.each(['2023-02-29', '2024-1-01', '2024-01-1', '2024-01-01T00:00:00Z', '2024/01/01', '1900-02-29', ''])('refuses %j', (text) => {
    expect(parseDate(text)).toBeUndefined();
  });

  it('accepts a Date only at midnight UTC', () => {
    expect(isMidnightUtc(new Date('1969-12-31T00:00:00Z'))).toBe(true);
    expect(isMidnightUtc(new Date('2024-01-01T00:00:00.001Z'))).toBe(false);
    expect(isMidnightUtc(new Date(Number.NaN))).toBe(false);
  });

  it('formats epoch days back to the same YYYY-MM-DD', () => {
    fc.assert(
      fc.property(fc.integer({ min: -719_528, max: 2_932_896 }), (days) => {
        expect(parseDate(formatDateDays(days))).toBe(days);
      }),
    );
    expect(formatDateDays(-683_309)).toBe('0099-03-01');
  });
});
