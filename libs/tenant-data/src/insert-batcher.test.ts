import { describe, expect, it } from 'vitest';
import { InsertBatcher } from './insert-batcher.ts';

describe('InsertBatcher', () => {
  it('writes a lone document at once, and those arriving during a write together in the next', async () => {
    const writes: number[][] = [];
    let release!: () => void;
    let first = true;
    const batcher = new InsertBatcher<number>(async (docs) => {
      writes.push(docs);
      if (first) {
        first = false;
        await new Promise<void>((resolve) => (release = resolve));
      }
    });
    const lone = batcher.add(1);
    const queued = [batcher.add(2), batcher.add(3), batcher.add(4)];
    expect(writes).toEqual([[1]]);
    release();
    await Promise.all([lone, ...queued]);
    expect(writes).toEqual([[1], [2, 3, 4]]);
  });

  it('fails every caller of a failed write, and only those', async () => {
    let fail = true;
    const batcher = new InsertBatcher<string>(async () => {
      if (fail) {
        fail = false;
        throw new Error('disk full');
      }
    });
    await expect(batcher.add('a')).rejects.toThrow('disk full');
    await expect(batcher.add('b')).resolves.toBeUndefined();
  });

  it('splits a long queue into batches of at most maxBatch', async () => {
    const sizes: number[] = [];
    let hold = true;
    let release!: () => void;
    const batcher = new InsertBatcher<number>(async (docs) => {
      sizes.push(docs.length);
      if (hold) {
        hold = false;
        await new Promise<void>((resolve) => (release = resolve));
      }
    }, 3);
    const all = Array.from({ length: 8 }, (_, i) => batcher.add(i));
    release();
    await Promise.all(all);
    expect(sizes).toEqual([1, 3, 3, 1]);
  });
});
