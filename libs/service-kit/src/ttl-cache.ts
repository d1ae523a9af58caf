/**
 * A small read-through cache with a time-to-live and a size bound, for lookups a service
 * repeats on every request. Writers in the same process call `delete` so that they read
 * their own writes at once; other processes see a change within the TTL.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  private readonly pending = new Map<string, Promise<V>>();

  constructor(
    private readonly options: {
      ttlMs: number;
      maxEntries: number;
      /** Keep `null`/`undefined` results too. Off by default: what is missing may appear any moment. */
      keepMisses?: boolean;
      /** The clock, in milliseconds (tests move it). */
      now?: () => number;
    },
  ) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** The fresh entry of `key`, without loading anything. */
  peek(key: string): V | undefined {
    const hit = this.entries.get(key);
    return hit && hit.expiresAt > this.now() ? hit.value : undefined;
  }

  get enabled(): boolean {
    return this.options.ttlMs > 0;
  }

  async get(key: string, load: () => Promise<V>): Promise<V> {
    if (!this.enabled) return load();
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > this.now()) return hit.value;
    // Concurrent misses of one key share a single load.
    const inFlight = this.pending.get(key);
    if (inFlight) return inFlight;
    const loading = load()
      .then((value) => {
        const keep = value !== null && value !== undefined ? true : this.options.keepMisses === true;
        if (keep && this.pending.get(key) === loading) this.set(key, value);
        return value;
      })
      .finally(() => {
        if (this.pending.get(key) === loading) this.pending.delete(key);
      });
    this.pending.set(key, loading);
    return loading;
  }

  delete(key: string): void {
    this.entries.delete(key);
    // A load that started before the change must not store what it read.
    this.pending.delete(key);
  }

  /** Stores `value` for the TTL, the oldest entry dropped when the cache is full. */
  set(key: string, value: V): void {
    if (!this.enabled) return;
    if (this.entries.size >= this.options.maxEntries && !this.entries.has(key)) {
      // Maps iterate in insertion order: the first key is the oldest entry.
      this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(key, { value, expiresAt: this.now() + this.options.ttlMs });
  }
}
