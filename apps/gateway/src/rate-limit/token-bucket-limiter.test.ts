import { describe, expect, it } from 'vitest';
import { TokenBucketLimiter } from './token-bucket-limiter.ts';

describe('TokenBucketLimiter', () => {
  it('allows a burst, then refuses with a retry time, then refills', () => {
    let now = 0;
    const limiter = new TokenBucketLimiter(2, 3, () => now);
    expect([1, 2, 3].map(() => limiter.take('a').allowed)).toEqual([true, true, true]);
    const refused = limiter.take('a');
    expect(refused).toEqual({ allowed: false, retryAfterSeconds: 1 });
    now += 500;
    expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('a').allowed).toBe(false);
  });

  it('tells whether a key has capacity without spending it', () => {
    const limiter = new TokenBucketLimiter(1, 1, () => 0);
    expect(limiter.hasCapacity('a')).toBe(true);
    expect(limiter.hasCapacity('a')).toBe(true);
    limiter.take('a');
    expect(limiter.hasCapacity('a')).toBe(false);
  });

  it('keeps callers apart', () => {
    const limiter = new TokenBucketLimiter(1, 1, () => 0);
    expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('a').allowed).toBe(false);
    expect(limiter.take('b').allowed).toBe(true);
  });

  it('never grows past its key budget', () => {
    let now = 0;
    const limiter = new TokenBucketLimiter(10, 1, () => now, 10);
    for (let i = 0; i < 10; i += 1) limiter.take(`k${i}`);
    now += 1000;
    limiter.take('new');
    expect((limiter as unknown as { buckets: Map<string, unknown> }).buckets.size).toBe(1);
  });
});
