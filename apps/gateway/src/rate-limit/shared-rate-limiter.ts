import type { RedisConnection } from '@envengine/redis-connections';
import { RATE_LIMIT_KEY_PREFIX } from '@envengine/api-tokens';
import type { RateDecision, TokenBucketLimiter } from './token-bucket-limiter.ts';

/**
 * The token bucket of TokenBucketLimiter, kept in Redis and updated in one script, so
 * that every gateway replica draws on the same bucket. Redis's clock, not the gateways':
 * replicas whose clocks differ still agree. Takes up to ARGV[3] tokens at once (a lease);
 * a bucket idle long enough to be full again expires. Returns `{tokens taken, milliseconds
 * until one more token}`.
 */
const TAKE_TOKENS_SCRIPT = `
local perSecond = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local wanted = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(bucket[1]) or burst
local at = tonumber(bucket[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * perSecond / 1000)
local taken = 0
local waitMs = 0
if tokens >= 1 then
  taken = math.min(wanted, math.floor(tokens))
  tokens = tokens - taken
else
  waitMs = math.ceil((1 - tokens) * 1000 / perSecond)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / perSecond) + 1000)
return {taken, waitMs}
`;

/** How long tokens taken ahead may be spent: a lease never turns into a later burst. */
const LEASE_MS = 1_000;

const COMMAND = 'envengineTakeTokens';

const ALLOWED: RateDecision = { allowed: true, retryAfterSeconds: 0 };

/** What one Redis call gave: a token (and maybe a lease), a refusal, or no answer. */
type Refill = { kind: 'taken' } | { kind: 'refused'; decision: RateDecision } | { kind: 'unavailable' };

type TakeTokens = (key: string, perSecond: number, burst: number, wanted: number) => Promise<[number, number]>;

/**
 * A per-token rate limit shared by every gateway replica (a bucket per token in Redis),
 * so that N gateways let a token through at its rate, not N times it. A gateway takes a
 * busy token's tokens a twentieth of a second's worth at a time and spends them here
 * within a second: one Redis call per such lease, never more let through than the bucket
 * gives (a lease unspent is lost, never added to a later burst). While Redis cannot
 * answer, each gateway falls back to its own bucket (`local`): the API stays up, at up to
 * N times the rate, and `onRedis` hears of each change between the two.
 */
export class SharedRateLimiter {
  private readonly takeTokens: TakeTokens;
  private readonly leaseSize: number;
  /** Tokens this gateway took ahead, per key, and until when they may be spent. */
  private readonly leases = new Map<string, { tokens: number; until: number }>();
  /** The Redis call under way for a key, which its other requests wait for. */
  private readonly refills = new Map<string, Promise<Refill>>();
  /** How many requests of a key wait for its refill under way (the next refill takes for them too). */
  private readonly waiting = new Map<string, number>();
  private usingLocal = false;

  constructor(
    redis: RedisConnection,
    /** Which limit (`api`, `worker`): each has buckets of its own. */
    private readonly limit: string,
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly local: TokenBucketLimiter,
    private readonly onRedis: (state: 'lost' | 'back', error?: Error) => void = () => undefined,
  ) {
    // One definition per connection (EVALSHA, loading the script when Redis lacks it).
    if (!(COMMAND in redis)) redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: TAKE_TOKENS_SCRIPT });
    this.takeTokens = (redis as unknown as Record<typeof COMMAND, TakeTokens>)[COMMAND].bind(redis);
    this.leaseSize = Math.max(1, Math.min(Math.floor(perSecond / 20), Math.floor(burst / 2)));
  }

  async take(key: string): Promise<RateDecision> {
    // Requests of one token that arrive together wait for one Redis call and share what
    // it took, rather than each taking a lease that the others then cannot spend.
    for (;;) {
      if (this.spendLease(key)) return ALLOWED;
      const pending = this.refills.get(key);
      if (!pending) break;
      this.countWaiting(key, 1);
      const refill = await pending;
      this.countWaiting(key, -1);
      if (refill.kind === 'refused') return refill.decision;
      if (refill.kind === 'unavailable') return this.local.take(key);
    }
    const refill = this.refill(key);
    this.refills.set(key, refill);
    try {
      const outcome = await refill;
      if (outcome.kind === 'refused') return outcome.decision;
      if (outcome.kind === 'unavailable') return this.local.take(key);
      return ALLOWED;
    } finally {
      this.refills.delete(key);
    }
  }

  /** One Redis call: one token for the caller, the rest of what it took leased here. */
  private async refill(key: string): Promise<Refill> {
    const now = Date.now();
    try {
      // This request's token and one for each request still waiting, when more than a lease.
      const wanted = Math.max(this.leaseSize, 1 + (this.waiting.get(key) ?? 0));
      // The braces: one bucket is one key, in one slot of a Redis Cluster.
      const [taken, waitMs] = await this.takeTokens(`${RATE_LIMIT_KEY_PREFIX}{${this.limit}:${key}}`, this.perSecond, this.burst, wanted);
      if (this.usingLocal) {
        this.usingLocal = false;
        this.onRedis('back');
      }
      if (taken === 0) return { kind: 'refused', decision: { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) } };
      if (taken > 1) this.keepLease(key, taken - 1, now);
      return { kind: 'taken' };
    } catch (error) {
      if (!this.usingLocal) {
        this.usingLocal = true;
        this.onRedis('lost', error as Error);
      }
      return { kind: 'unavailable' };
    }
  }

  private countWaiting(key: string, change: 1 | -1): void {
    const count = (this.waiting.get(key) ?? 0) + change;
    if (count > 0) this.waiting.set(key, count);
    else this.waiting.delete(key);
  }

  private spendLease(key: string): boolean {
    const lease = this.leases.get(key);
    if (!lease || lease.tokens < 1 || lease.until <= Date.now()) return false;
    lease.tokens -= 1;
    return true;
  }

  private keepLease(key: string, tokens: number, now: number): void {
    // Expired leases go when the map grows, so idle tokens leave nothing behind.
    if (this.leases.size >= 10_000) for (const [held, lease] of this.leases) if (lease.until <= now) this.leases.delete(held);
    // Two leases taken at once (concurrent requests) add up rather than one hiding the other.
    const held = this.leases.get(key);
    this.leases.set(key, { tokens: tokens + (held && held.until > now ? held.tokens : 0), until: now + LEASE_MS });
  }
}
