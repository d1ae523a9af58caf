export interface RateDecision {
  allowed: boolean;
  /** Whole seconds until one more request would be allowed (for Retry-After). */
  retryAfterSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/**
 * A token bucket per caller: `burst` requests at once, refilled at `perSecond`. Kept in
 * the gateway's memory, so with N gateway replicas a caller gets N times the rate.
 */
export class TokenBucketLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
    private readonly maxKeys = 100_000,
  ) {}

  /** Whether `key` could take a request now, without taking one. */
  hasCapacity(key: string): boolean {
    const bucket = this.buckets.get(key);
    if (!bucket) return true;
    return bucket.tokens + ((this.now() - bucket.updatedMs) / 1000) * this.perSecond >= 1;
  }

  take(key: string): RateDecision {
    const now = this.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.evictFullBuckets(now);
      bucket = { tokens: this.burst, updatedMs: now };
      this.buckets.set(key, bucket);
    } else {
      const refill = ((now - bucket.updatedMs) / 1000) * this.perSecond;
      bucket.tokens = Math.min(this.burst, bucket.tokens + refill);
      bucket.updatedMs = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true, retryAfterSeconds: 0 };
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond)) };
  }

  /** Buckets that would be full again carry no state worth keeping. */
  private evictFullBuckets(now: number): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.updatedMs) / 1000) * this.perSecond >= this.burst) this.buckets.delete(key);
    }
  }
}
