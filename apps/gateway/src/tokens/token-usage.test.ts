import { describe, expect, it } from 'vitest';
import { TokenUsage } from './token-usage.ts';

describe('TokenUsage', () => {
  it('writes each token once per flush, at its latest use, and keeps a failed batch for the next', async () => {
    let now = 1_000;
    const written: Array<Map<string, number>> = [];
    let fail = false;
    const usage = new TokenUsage(
      async (batch) => {
        if (fail) throw new Error('mongo away');
        written.push(new Map([...batch].map(([id, at]) => [id, at.getTime()])));
      },
      () => undefined,
      () => new Date(now),
    );
    usage.seen('tok_a');
    now = 2_000;
    usage.seen('tok_a');
    usage.seen('tok_b');
    await usage.flush();
    expect(written).toEqual([new Map([['tok_a', 2_000], ['tok_b', 2_000]])]);
    await usage.flush();
    expect(written).toHaveLength(1);

    fail = true;
    now = 3_000;
    usage.seen('tok_a');
    await usage.flush();
    fail = false;
    now = 4_000;
    usage.seen('tok_b');
    await usage.stop();
    expect(written[1]).toEqual(new Map([['tok_b', 4_000], ['tok_a', 3_000]]));
  });
});
