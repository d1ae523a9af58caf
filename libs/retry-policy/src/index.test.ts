import { describe, expect, it } from 'vitest';
import { backoffDelay, retrying } from './index.ts';

describe('backoffDelay', () => {
  it('grows by the factor from the first wait and stops at the cap, even for a series long enough to overflow', () => {
    const backoff = { firstMs: 250, factor: 2, maxMs: 4_000 };
    expect([1, 2, 3, 4, 5, 6].map((tries) => backoffDelay(backoff, tries))).toEqual([250, 500, 1_000, 2_000, 4_000, 4_000]);
    expect(backoffDelay(backoff, 5_000)).toBe(4_000);
  });

  it('adds up to the jitter of itself at random, and nothing without it', () => {
    const backoff = { firstMs: 1_000, factor: 4, maxMs: 60_000, jitter: 0.1 };
    expect(backoffDelay(backoff, 2, () => 0)).toBe(4_000);
    expect(backoffDelay(backoff, 2, () => 0.5)).toBe(4_200);
    expect(backoffDelay(backoff, 2, () => 0.999)).toBe(4_400);
    expect(backoffDelay({ firstMs: 1_000, factor: 4, maxMs: 60_000 }, 2, () => 0.999)).toBe(4_000);
  });
});

describe('retrying', () => {
  const backoff = { firstMs: 100, factor: 2, maxMs: 1_000 };

  it('tries a thrown error again after each back-off, and answers the first success', async () => {
    const waits: number[] = [];
    const tries: number[] = [];
    const answer = await retrying(
      async (n) => {
        tries.push(n);
        if (n < 3) throw new Error(`refused ${n}`);
        return 'ok';
      },
      { backoff, sleep: async (ms) => void waits.push(ms) },
    );
    expect(answer).toBe('ok');
    expect(tries).toEqual([1, 2, 3]);
    expect(waits).toEqual([100, 200]);
  });

  it('throws the last error once the tries run out, and an error it does not retry at once', async () => {
    const waits: number[] = [];
    await expect(retrying(async (n) => Promise.reject(new Error(`refused ${n}`)), { backoff, maxTries: 3, sleep: async (ms) => void waits.push(ms) })).rejects.toThrow('refused 3');
    expect(waits).toEqual([100, 200]);
    await expect(retrying(async () => Promise.reject(new Error('for good')), { backoff, retryError: () => false, sleep: async () => expect.fail('no wait') })).rejects.toThrow('for good');
  });

  it("tries an answer again when asked, reading it out first and waiting what it asks for, and returns the last one once the deadline passed", async () => {
    let clock = 0;
    const discarded: number[] = [];
    const waits: number[] = [];
    const answer = await retrying(async (n) => ({ status: 503, n }), {
      backoff,
      deadline: 450,
      retryValue: (value) => value.status === 503,
      discard: (value) => void discarded.push(value.n),
      waitOf: (value) => (value.n === 1 ? 150 : undefined),
      now: () => clock,
      sleep: async (ms) => {
        waits.push(ms);
        clock += ms;
      },
    });
    // Waits 150 (asked), 200, 400: past the deadline at 750, the fourth answer stands.
    expect(waits).toEqual([150, 200, 400]);
    expect(discarded).toEqual([1, 2, 3]);
    expect(answer).toEqual({ status: 503, n: 4 });
  });

  it('returns an answer it does not retry at once', async () => {
    expect(await retrying(async () => ({ status: 200 }), { backoff, retryValue: (value) => value.status === 503, sleep: async () => expect.fail('no wait') })).toEqual({ status: 200 });
  });
});
