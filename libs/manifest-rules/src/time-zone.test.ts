import { describe, expect, it } from 'vitest';
import { timeZoneProblem } from './time-zone.ts';

describe('timeZoneProblem', () => {
  it.each(['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Kolkata', 'Etc/GMT+5', 'US/Pacific'])('accepts %s', (zone) => {
    expect(timeZoneProblem(zone)).toBeNull();
  });

  it.each([
    ['Mars/Base', 'is not a known IANA time zone'],
    ['', 'is not an IANA time zone name such as "Europe/Paris"'],
    ['+01:00', 'is not an IANA time zone name such as "Europe/Paris"'],
    ['europe/paris', 'is not spelled as the IANA time zone "Europe/Paris"'],
    ['utc', 'is not spelled as the IANA time zone "UTC"'],
    ['Europe/Paris ', 'is not a known IANA time zone (did you mean "Europe/Paris"?)'],
    ['Europe/Berln', 'is not a known IANA time zone (did you mean "Europe/Berlin"?)'],
  ])('rejects %j', (zone, reason) => {
    expect(timeZoneProblem(zone)).toBe(reason);
  });
});

describe('timeZoneProblem against the runtime zone list', () => {
  it('accepts every zone the runtime lists', () => {
    const rejected = Intl.supportedValuesOf('timeZone').filter((zone) => timeZoneProblem(zone) !== null);
    expect(rejected).toEqual([]);
  });
});
