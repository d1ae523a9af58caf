import type { Redis } from 'ioredis';
import { RATE_LIMIT_KEY_PREFIX } from '@envengine/api-tokens';
import type { RateDecision, TokenBucketLimiter } from './token-bucket-limiter.ts';

/**
 * The token bucket of TokenBucketLimiter, kept in Redis and updated in one script, so
 * that every gateway replica draws on the same bucket. Redis's clock, not the gateways':
 * replicas whose clocks differ still agree. A bucket idle long enough to be full again
 * expires. Returns `{allowed (0 or 1), milliseconds until one more token}`.
 */
const TAKE_TOKEN_SCRIPT = `
local perSecond = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(bucket[1]) or burst
local at = tonumber(bucket[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * perSecond / 1000)
local allowed = 0
local waitMs = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  waitMs = math.ceil((1 - tokens) * 1000 / perSecond)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / perSecond) + 1000)
return {allowed, waitMs}
`;

const COMMAND = 'envengineTakeToken';

type TakeToken = (key: string, perSecond: number, burst: number) => Promise<[number, number]>;

/**
 * A per-token rate limit shared by every gateway replica (a bucket per token in Redis),
 * so that N gateways let a token through at its rate, not N times it. While Redis cannot
 * answer, each gateway falls back to its own bucket (`local`): the API stays up, at up
 * to N times the rate, and `onRedis` hears of each change between the two.
 */
export class SharedRateLimiter {
  private readonly takeToken: TakeToken;
  private usingLocal = false;

  constructor(
    private readonly redis: Redis,
    /** Which limit (`api`, `worker`): each has buckets of its own. */
    private readonly limit: string,
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly local: TokenBucketLimiter,
    private readonly onRedis: (state: 'lost' | 'back', error?: Error) => void = () => undefined,
  ) {
    // One definition per connection (EVALSHA, loading the script when Redis lacks it).
    if (!(COMMAND in redis)) redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: TAKE_TOKEN_SCRIPT });
    this.takeToken = (redis as unknown as Record<typeof COMMAND, TakeToken>)[COMMAND].bind(redis);
  }

  async take(key: string): Promise<RateDecision> {
    try {
      // The braces: one bucket is one key, in one slot of a Redis Cluster.
      const [allowed, waitMs] = await this.takeToken(`${RATE_LIMIT_KEY_PREFIX}{${this.limit}:${key}}`, this.perSecond, this.burst);
      if (this.usingLocal) {
        this.usingLocal = false;
        this.onRedis('back');
      }
      return allowed === 1 ? { allowed: true, retryAfterSeconds: 0 } : { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    } catch (error) {
      if (!this.usingLocal) {
        this.usingLocal = true;
        this.onRedis('lost', error as Error);
      }
      return this.local.take(key);
    }
  }
}
