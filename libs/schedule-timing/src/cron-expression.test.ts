import { describe, expect, it } from 'vitest';
import { cronExpressionProblem, parseCronExpression } from './cron-expression.ts';

describe('cronExpressionProblem', () => {
  it.each([
    '0 2 * * *',
    '*/15 * * * *',
    '0 0 1 JAN *',
    '0 0 1 jan *',
    '0 9 * * MON-FRI',
    '0 9 * * mon-fri/2',
    '0 0 * * 0',
    '0 0 * * 7',
    '0 0 * * 5-7',
    '0 0 * * SUN,SAT',
    '0,15,30,45 * * * *',
    '0-30/5 8-18 * * *',
    '59 23 31 12 6',
    '0 0 1 1-12/3 *',
    '  0  2\t* * *  ',
    '05 02 * * *',
    '*/60 * * * *',
    '@yearly',
    '@annually',
    '@monthly',
    '@weekly',
    '@daily',
    '@midnight',
    '@hourly',
    '* * * * * *',
    '*/5 * * * * *',
    '0 0 0 * * *',
  ])('accepts %j', (expression) => {
    expect(cronExpressionProblem(expression)).toBeNull();
  });

  it.each([
    ['61 * * * *', 'minute "61" is out of range 0-59'],
    ['* * *', 'it has 3 fields, but needs 5 (minute hour day-of-month month day-of-week) or 6 (second first)'],
    ['0 0 0 * * * *', 'it has 7 fields, but needs 5 (minute hour day-of-month month day-of-week) or 6 (second first)'],
    ['60 * * * * *', 'second "60" is out of range 0-59'],
    ['', 'it has 0 fields, but needs 5 (minute hour day-of-month month day-of-week) or 6 (second first)'],
    ['0 2 * * 8', 'day of week "8" is out of range 0-7'],
    ['x * * * *', 'minute "x" is not a number from 0 to 59'],
    ['1-0/0 * * * *', 'the minute step "0" must be a whole number from 1 to 60'],
    ['5-1 * * * *', 'the minute range "5-1" runs backwards'],
    ['0 24 * * *', 'hour "24" is out of range 0-23'],
    ['0 0 0 * *', 'day of month "0" is out of range 1-31'],
    ['0 0 32 * *', 'day of month "32" is out of range 1-31'],
    ['0 0 * 13 *', 'month "13" is out of range 1-12'],
    ['0 0 * 0 *', 'month "0" is out of range 1-12'],
    ['0 0 * JANUARY *', 'month "JANUARY" is not a number from 1 to 12 or a name such as JAN'],
    ['0 0 * * MON-SUNDAY', 'day of week "SUNDAY" is not a number from 0 to 7 or a name such as SUN'],
    ['0 0 * MON *', 'month "MON" is not a number from 1 to 12 or a name such as JAN'],
    ['0 0 1 * JAN', 'day of week "JAN" is not a number from 0 to 7 or a name such as SUN'],
    ['5/10 * * * *', 'the minute item "5/10" needs "*" or a range "a-b" before "/"'],
    ['*/0 * * * *', 'the minute step "0" must be a whole number from 1 to 60'],
    ['*/x * * * *', 'the minute step "x" must be a whole number from 1 to 60'],
    ['*/61 * * * *', 'the minute step "61" must be a whole number from 1 to 60'],
    ['*/5/2 * * * *', 'the minute item "*/5/2" has more than one "/"'],
    ['1-2-3 * * * *', 'the minute range "1-2-3" has more than one "-"'],
    ['1,,2 * * * *', 'the minute field "1,,2" has an empty list item'],
    ['-1 * * * *', 'the minute item "-1" is missing a value'],
    ['0 1- * * *', 'the hour item "1-" is missing a value'],
    ['0 0 ? * *', 'day of month "?" is not a number from 1 to 31'],
    ['0 0 L * *', 'day of month "L" is not a number from 1 to 31'],
    ['0 0 * * 1#2', 'day of week "1#2" is not a number from 0 to 7 or a name such as SUN'],
    ['0 2 * *\n*', 'it has 4 fields, but needs 5 (minute hour day-of-month month day-of-week) or 6 (second first)'],
    ['@every 5m', '"@every 5m" is not one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly'],
    ['@DAILY', '"@DAILY" is not one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly'],
    [`${'1,'.repeat(200)}1 * * * *`, 'it is longer than 256 characters'],
  ])('rejects %j: %s', (expression, reason) => {
    expect(cronExpressionProblem(expression)).toBe(reason);
  });
});

describe('parseCronExpression', () => {
  it('lists the values of each field, seconds 0 for five fields', () => {
    expect(parseCronExpression('0-30/10 8 * JAN-MAR/2 MON-FRI')).toEqual({
      seconds: [0],
      minutes: [0, 10, 20, 30],
      hours: [8],
      daysOfMonth: Array.from({ length: 31 }, (_, index) => index + 1),
      months: [1, 3],
      daysOfWeek: [1, 2, 3, 4, 5],
      anyDayOfMonth: true,
      anyDayOfWeek: false,
      hasSeconds: false,
    });
  });

  it('reads six fields with seconds first, folds Sunday 7 into 0 and expands macros', () => {
    const parsed = parseCronExpression('*/20 * * 1,15 * 5-7');
    expect(parsed).toMatchObject({ seconds: [0, 20, 40], daysOfMonth: [1, 15], daysOfWeek: [0, 5, 6], anyDayOfMonth: false, hasSeconds: true });
    expect(parseCronExpression('@weekly')).toMatchObject({ minutes: [0], hours: [0], daysOfWeek: [0], anyDayOfWeek: false });
  });
});
