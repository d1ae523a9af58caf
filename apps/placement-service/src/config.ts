import { resolve } from 'node:path';
import { z } from 'zod';
import { redisUrlSetting } from '@envengine/redis-connections';
import { EngineNetworkGuard } from '@envengine/egress-rules';
import { MasterKeyring } from '@envengine/sealed-values';
import { DEFAULT_TASK_QUEUE } from '@envengine/contracts';
import { InternalCredential, internalServiceConfigSchema, parseConfig, PortFromEnv, PositiveIntFromEnv, temporalConfigShape, ServiceOriginsFromEnv } from '@envengine/service-kit';

/** A comma-separated list; empty when unset. */
const CommaList = z
  .string()
  .default('')
  .transform((text) => text.split(',').map((part) => part.trim()).filter(Boolean));

const placementConfigSchema = internalServiceConfigSchema({ port: 8081, mongoDb: 'envengine_placement' }).extend({
  REDIS_URL: redisUrlSetting('attempts are queued in Redis'),
  /**
   * The pool gate, where pool workers reach their queues: a Redis-protocol listener that
   * passes only a BullMQ worker's commands to REDIS_URL (pool/pool-gate.ts). On every
   * address by default, as the gateway's port is: workers run on other hosts.
   */
  POOL_GATE_HOST: z.string().default('0.0.0.0'),
  POOL_GATE_PORT: PortFromEnv(6380),
  /**
   * Connections the pool gate holds at once, of every pool, and of one pool credential:
   * each holds one to Redis (two or three per worker process), whose `maxclients` (10,000)
   * the engine's services share; so no credential takes them all, nor all pools Redis's.
   * Per credential: ten worker processes; with the `pool_credentials` quota (10), a tenant
   * holds at most 320.
   */
  POOL_GATE_MAX_CONNECTIONS: PositiveIntFromEnv(2048),
  POOL_GATE_MAX_CONNECTIONS_PER_CREDENTIAL: PositiveIntFromEnv(32),
  /**
   * Reply bytes one pool gate connection may leave unread (or held for their turn): past
   * it the gate passes none of its further commands until the client reads, and closes it
   * if it stays over for `POOL_GATE_UNREAD_TIMEOUT_MS`.
   */
  POOL_GATE_MAX_UNREAD_REPLY_BYTES: PositiveIntFromEnv(1024 * 1024),
  POOL_GATE_UNREAD_TIMEOUT_MS: PositiveIntFromEnv(30_000),
  /**
   * Bytes one pool's queue may hold in Redis (its keys' `MEMORY USAGE`, measured at most
   * once a second per queue): past it the gate refuses the pool's writes of more than
   * 4 KiB, so one pool cannot fill the `maxmemory` every tenant's runs need.
   */
  POOL_REDIS_MEMORY_BYTES: PositiveIntFromEnv(8 * 1024 * 1024),
  /**
   * The Redis URL pool workers are told to use (in every credential issued): the pool
   * gate's address as other hosts reach it, e.g. `redis://queues.example.com:6380`; no
   * credential in it (each pool signs in as its own user). Default: the pool gate on this
   * host's loopback.
   */
  PUBLIC_REDIS_URL: redisUrlSetting('the Redis pool workers use', { withCredential: false }).optional(),
  DEPLOYMENT_SERVICE_URL: ServiceOriginsFromEnv('deployment-service', 'http://127.0.0.1:8082'),
  SECRETS_SERVICE_URL: ServiceOriginsFromEnv('secrets-service', 'http://127.0.0.1:8083'),
  /** Opens the secrets-service's resolution, which `ctx.connection` needs on a worker's behalf. */
  RESOLVER_CREDENTIAL: InternalCredential,
  /**
   * How long a running attempt's lease lasts without a heartbeat: a worker silent for
   * longer is presumed dead, its attempt becomes `lost` and a new one is dispatched.
   */
  ATTEMPT_LEASE_TTL_MS: PositiveIntFromEnv(15_000),
  /** Temporal, where the schedules' tick loops, the tear-downs and the TTLs run. */
  ...temporalConfigShape,
  /** The workflow-worker's task queue, where tear-down, expiry and tick-loop workflows are started. */
  DEPLOYMENTS_TASK_QUEUE: z.string().min(1).default(DEFAULT_TASK_QUEUE),
  /**
   * Tick loops over the stored schedules (`schedule-ticks-<shard>`): each ticks its share
   * of the environments. A changed count moves the schedules at the next start.
   */
  SCHEDULE_TICK_SHARDS: PositiveIntFromEnv(2).refine((shards) => shards <= 64, { message: 'must be at most 64' }),
  /**
   * How long a DELETE waits for its tear-down before it answers 503 (the tear-down goes on;
   * a repeat joins it). With the start's own deadline (5 s) it stays inside the gateway's 30 s.
   */
  TEARDOWN_WAIT_MS: PositiveIntFromEnv(20_000),
  /**
   * The engine runner's slots shared fairly across tenants (issue 35): a local attempt goes
   * to the runner's queue only when the tenant holding the fewest slots is its own. `off`:
   * first come, first served.
   */
  LOCAL_FAIR_SHARE: z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
  /**
   * The runner's slots in all when no runner has reported yet, and the least assumed once
   * they have (then it is the sum of the live runners' CONCURRENCY, if larger).
   */
  LOCAL_RUNNER_SLOTS: PositiveIntFromEnv(4),
  /**
   * The runner's slots one tenant may hold at once. Unset: the runner's slots less one (at
   * least one), so that a tenant with nothing running never waits for a slot to free
   * (issue 68, docs/decisions.md); `all`: no cap beyond its fair share.
   */
  LOCAL_MAX_PER_TENANT: z.union([z.literal('all'), z.coerce.number({ message: 'must be a positive integer or all' }).int().positive()]).optional(),
  /** How often queued attempts are re-offered to the queue (a crash between the write and the queue add). */
  DISPATCH_RECONCILE_INTERVAL_MS: PositiveIntFromEnv(5_000),
  /**
   * How long the audit log keeps an event (`GET /events`, a TTL index on its time); a
   * changed value applies to stored events too, at the next start.
   */
  EVENT_RETENTION_DAYS: z.coerce.number().positive().max(3650).default(90),
  /** Log lines kept of one attempt (workers are told in the plan; more are not stored). */
  ATTEMPT_LOG_MAX_LINES: PositiveIntFromEnv(10_000),
  /** Characters of log messages one attempt's worker keeps before it cuts the log. */
  ATTEMPT_LOG_MAX_CHARS: PositiveIntFromEnv(10 * 1024 * 1024),
  /**
   * The engine's storage root: a `file://` storage prefix must lie under it (the engine's
   * runner writes there for tenants). Relative to the working directory.
   */
  STORAGE_ROOT: z.string().min(1).default('.envengine/lake/').transform((path) => resolve(path)),
  /**
   * The engine's own S3-compatible store (SeaweedFS under `npm start`), used by `s3://`
   * prefixes whose binding names no endpoint; none when unset. Its administrator's keys are
   * held here only: each tenant is issued keys of its own (docs/operations.md).
   */
  ENGINE_S3_URL: z.url({ message: 'must be the http(s) endpoint of the engine\'s object store' }).optional(),
  ENGINE_S3_ADMIN_ACCESS_KEY: z.string().min(1).optional(),
  ENGINE_S3_ADMIN_SECRET_KEY: z.string().min(8).optional(),
  ENGINE_S3_REGION: z.string().min(1).default('us-east-1'),
  ENGINE_S3_BUCKET: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { message: 'must be a bucket name' }).default('lake'),
  /**
   * The store's IAM API, where this service makes each environment's users and keys.
   * Default: ENGINE_S3_URL. SeaweedFS's must not be on the S3 endpoint that tenants' keys
   * reach (it lets a user mint keys for itself): `npm start` and docker-compose serve it
   * from a gateway of its own that only this service is given.
   */
  ENGINE_S3_IAM_URL: z.url({ message: 'must be the http(s) endpoint of the object store\'s IAM API' }).optional(),
  /** The store's endpoint as workers on other hosts reach it. Default: ENGINE_S3_URL. */
  PUBLIC_S3_URL: z.url({ message: 'must be an http(s) URL' }).optional(),
  /** base64 of 32 bytes: seals the webhooks' signing secrets at rest (`npm run -s admin -- master-key new`). */
  WEBHOOKS_MASTER_KEY: z.string({ message: 'is required (base64 of 32 random bytes)' }).min(1),
  /** Comma-separated keys that still open signing secrets sealed before a change of WEBHOOKS_MASTER_KEY. */
  WEBHOOKS_PREVIOUS_MASTER_KEYS: z.string().default(''),
  /**
   * Addresses or CIDR ranges on the engine's own network that webhooks may target anyway
   * (comma-separated), e.g. a receiver of the operator's on a private address. None by default.
   */
  WEBHOOK_TARGETS_ALLOWED: CommaList,
  /** DNS servers (`host` or `host:port`, comma-separated) that webhook targets are resolved with; the system's resolver when empty. */
  WEBHOOK_DNS_SERVERS: CommaList,
  /** How long one delivery attempt may take, connection included. */
  WEBHOOK_TIMEOUT_MS: PositiveIntFromEnv(10_000),
  /** The first retry's wait; each next one is four times longer (webhooks/retry-schedule.ts). */
  WEBHOOK_RETRY_FIRST_DELAY_MS: PositiveIntFromEnv(5_000),
  /** How long a delivery is retried; one failing past it disables its webhook (a day). */
  WEBHOOK_RETRY_WINDOW_MS: PositiveIntFromEnv(86_400_000),
  /** How long a rotated-out signing secret still signs, beside the new one. */
  WEBHOOK_SECRET_OVERLAP_HOURS: z.coerce.number().positive().max(24 * 30).default(24),
  /** Webhook streams (a webhook's deliveries of one environment) sent at once by this replica. */
  WEBHOOK_DELIVERY_CONCURRENCY: PositiveIntFromEnv(16),
}).refine((config) => !config.ENGINE_S3_URL || (config.ENGINE_S3_ADMIN_ACCESS_KEY && config.ENGINE_S3_ADMIN_SECRET_KEY), {
  message: 'ENGINE_S3_ADMIN_ACCESS_KEY and ENGINE_S3_ADMIN_SECRET_KEY are required with ENGINE_S3_URL',
  path: ['ENGINE_S3_ADMIN_ACCESS_KEY'],
}).transform((config, ctx) => {
  try {
    const webhooksKeyring = MasterKeyring.fromText(config.WEBHOOKS_MASTER_KEY, config.WEBHOOKS_PREVIOUS_MASTER_KEYS);
    new EngineNetworkGuard({ allowed: config.WEBHOOK_TARGETS_ALLOWED });
    // The key text is not kept: only the parsed keyring leaves this function.
    const { WEBHOOKS_MASTER_KEY: _active, WEBHOOKS_PREVIOUS_MASTER_KEYS: _previous, ...rest } = config;
    return { ...rest, webhooksKeyring };
  } catch (error) {
    const path = /IP address|prefix length/.test((error as Error).message) ? 'WEBHOOK_TARGETS_ALLOWED' : 'WEBHOOKS_MASTER_KEY';
    ctx.addIssue({ code: 'custom', path: [path], message: (error as Error).message });
    return z.NEVER;
  }
});

export type PlacementConfig = z.infer<typeof placementConfigSchema>;

export function loadPlacementConfig(env: Record<string, string | undefined>): PlacementConfig & { PUBLIC_REDIS_URL: string } {
  const config = parseConfig(placementConfigSchema, env);
  const gateHost = config.POOL_GATE_HOST === '0.0.0.0' || config.POOL_GATE_HOST === '::' ? '127.0.0.1' : config.POOL_GATE_HOST;
  return { ...config, PUBLIC_REDIS_URL: config.PUBLIC_REDIS_URL ?? `redis://${gateHost.includes(':') ? `[${gateHost}]` : gateHost}:${config.POOL_GATE_PORT}` };
}
