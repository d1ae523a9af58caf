import { backoffDelay, type Backoff } from '@envengine/retry-policy';

/**
 * When a failed delivery is tried again: exponential back-off, each wait four times the
 * last, from `firstDelayMs`, none longer than a quarter of the window, for as many tries as
 * fit in `windowMs` (a day by default: 5 s, 20 s, 80 s, … ten tries over 19.6 hours). A delivery
 * that fails its last try has failed for the window, and its webhook is disabled.
 *
 * The number of tries follows from the settings, not from the clock, so a slow worker does
 * not lose a try.
 */
export interface RetrySchedule {
  firstDelayMs: number;
  windowMs: number;
}

/** The waits before each retry, in order (the first try is at once). */
export function retryDelays(schedule: RetrySchedule): number[] {
  const backoff = backoffOf(schedule);
  const delays: number[] = [];
  let total = 0;
  for (let next = backoffDelay(backoff, 1); total + next <= schedule.windowMs; next = backoffDelay(backoff, delays.length + 1)) {
    delays.push(next);
    total += next;
  }
  return delays;
}

function backoffOf(schedule: RetrySchedule): Backoff {
  return { firstMs: schedule.firstDelayMs, factor: 4, maxMs: Math.max(schedule.firstDelayMs, Math.floor(schedule.windowMs / 4)) };
}

/**
 * The wait after failed try number `tries` (1 for the first), with up to a tenth more at
 * random so that deliveries failing together do not all come back together; undefined when
 * that was the last try.
 */
export function delayAfterFailure(schedule: RetrySchedule, tries: number, random: () => number = Math.random): number | undefined {
  if (tries > retryDelays(schedule).length) return undefined;
  return backoffDelay({ ...backoffOf(schedule), jitter: 0.1 }, tries, random);
}
