import { afterEach, describe, expect, it, vi } from 'vitest';
import { TtlCache } from './ttl-cache.ts';

describe('TtlCache', () => {
  afterEach(() => vi.useRealTimers());

  it('serves a loaded value until it expires', async () => {
    vi.useFakeTimers();
    const cache = new TtlCache<number>({ ttlMs: 1000, maxEntries: 10 });
    let loads = 0;
    const load = async () => ++loads;
    expect(await cache.get('k', load)).toBe(1);
    expect(await cache.get('k', load)).toBe(1);
    vi.advanceTimersByTime(1001);
    expect(await cache.get('k', load)).toBe(2);
  });

  it('loads again after a delete, and drops a load that raced the delete', async () => {
    const cache = new TtlCache<string>({ ttlMs: 60_000, maxEntries: 10 });
    let release!: (value: string) => void;
    const slow = cache.get('k', () => new Promise<string>((resolve) => (release = resolve)));
    cache.delete('k');
    release('stale');
    expect(await slow).toBe('stale');
    expect(await cache.get('k', async () => 'fresh')).toBe('fresh');
  });

  it('shares one load between concurrent misses', async () => {
    const cache = new TtlCache<number>({ ttlMs: 60_000, maxEntries: 10 });
    let loads = 0;
    const load = async () => {
      loads += 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return loads;
    };
    expect(await Promise.all([cache.get('k', load), cache.get('k', load)])).toEqual([1, 1]);
    expect(loads).toBe(1);
  });

  it('keeps at most maxEntries, dropping the oldest', async () => {
    const cache = new TtlCache<string>({ ttlMs: 60_000, maxEntries: 2 });
    for (const key of ['a', 'b', 'c']) await cache.get(key, async () => key);
    let reloaded = false;
    await cache.get('a', async () => {
      reloaded = true;
      return 'a';
    });
    expect(reloaded).toBe(true);
  });

  it('loads a miss again unless told to keep misses', async () => {
    let loads = 0;
    const load = async () => {
      loads += 1;
      return null;
    };
    const forgetful = new TtlCache<null>({ ttlMs: 60_000, maxEntries: 10 });
    await forgetful.get('k', load);
    await forgetful.get('k', load);
    expect(loads).toBe(2);
    const keeping = new TtlCache<null>({ ttlMs: 60_000, maxEntries: 10, keepMisses: true });
    await keeping.get('k', load);
    await keeping.get('k', load);
    expect(loads).toBe(3);
  });

  it('does not cache when the TTL is 0', async () => {
    const cache = new TtlCache<number>({ ttlMs: 0, maxEntries: 10 });
    let loads = 0;
    await cache.get('k', async () => ++loads);
    await cache.get('k', async () => ++loads);
    expect(loads).toBe(2);
  });
});
