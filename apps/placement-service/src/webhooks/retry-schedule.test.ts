import { describe, expect, it } from 'vitest';
import { delayAfterFailure, retryDelays } from './retry-schedule.ts';

describe('webhook retry schedule', () => {
  it('backs off by four from 5 s, capped at six hours, for about a day', () => {
    const delays = retryDelays({ firstDelayMs: 5_000, windowMs: 86_400_000 });
    expect(delays.slice(0, 5)).toEqual([5_000, 20_000, 80_000, 320_000, 1_280_000]);
    expect(Math.max(...delays)).toBe(21_600_000);
    const total = delays.reduce((sum, delay) => sum + delay, 0);
    expect(total).toBeLessThanOrEqual(86_400_000);
    // The next wait would pass the day: the tries span most of it.
    expect(total + 21_600_000).toBeGreaterThan(86_400_000);
    expect(delays.length + 1).toBe(10);
  });

  it('gives a short schedule as many tries as fit its window', () => {
    expect(retryDelays({ firstDelayMs: 50, windowMs: 2_000 })).toEqual([50, 200, 500, 500, 500]);
    expect(retryDelays({ firstDelayMs: 50, windowMs: 40 })).toEqual([]);
  });

  it('adds at most a tenth at random, and ends after the last try', () => {
    const schedule = { firstDelayMs: 100, windowMs: 1_000 };
    expect(delayAfterFailure(schedule, 1, () => 0)).toBe(100);
    expect(delayAfterFailure(schedule, 1, () => 0.999)).toBe(110);
    expect(delayAfterFailure(schedule, 2, () => 0)).toBe(250);
    const tries = retryDelays(schedule).length + 1;
    expect(delayAfterFailure(schedule, tries)).toBeUndefined();
  });
});
