import { z } from 'zod';
import { redisUrlSetting } from '@envengine/redis-connections';
import { GATEWAY_UPSTREAM_TIMEOUT_MS } from '@envengine/contracts';
import { InternalCredential, LogLevel, parseConfig, PortFromEnv, PositiveIntFromEnv, ServiceOriginsFromEnv } from '@envengine/service-kit';
import { TracingSettings } from '@envengine/tracing';

const GatewayConfigSchema = z.object({
  HOST: z.string().default('0.0.0.0'),
  PORT: PortFromEnv(8080),
  // `/metrics` on a listener of its own, on the loopback unless told otherwise, as Prometheus's exporters do: never on the public port.
  METRICS_HOST: z.string().default('127.0.0.1'),
  METRICS_PORT: PortFromEnv(9464),
  MONGO_URL: z.string({ message: 'is required' }).min(1),
  MONGO_DB: z.string().default('envengine_gateway'),
  REDIS_URL: redisUrlSetting('rate limits and token revocations'),
  INTERNAL_CREDENTIAL: InternalCredential,
  PLACEMENT_SERVICE_URL: ServiceOriginsFromEnv('placement-service', 'http://127.0.0.1:8081'),
  DEPLOYMENT_SERVICE_URL: ServiceOriginsFromEnv('deployment-service', 'http://127.0.0.1:8082'),
  SECRETS_SERVICE_URL: ServiceOriginsFromEnv('secrets-service', 'http://127.0.0.1:8083'),
  /** Largest JSON request body, in bytes. */
  JSON_BODY_LIMIT_BYTES: PositiveIntFromEnv(1024 * 1024),
  /** Largest bundle upload, in bytes (streamed, never held whole). */
  BUNDLE_BODY_LIMIT_BYTES: PositiveIntFromEnv(64 * 1024 * 1024),
  /** `off` skips timing each request into `envengine_http_request_duration_seconds` (the benchmark's baseline); `/metrics` is served either way. */
  HTTP_METRICS: z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
  /** Sustained requests per second allowed for one token. */
  RATE_LIMIT_PER_SECOND: PositiveIntFromEnv(50),
  /** Requests one token may send in a burst above the sustained rate. */
  RATE_LIMIT_BURST: PositiveIntFromEnv(200),
  /** Per pool token: a worker's heartbeats, logs and reports (one token may serve many workers). */
  WORKER_RATE_LIMIT_PER_SECOND: PositiveIntFromEnv(2000),
  WORKER_RATE_LIMIT_BURST: PositiveIntFromEnv(4000),
  /** Sustained refused-token requests per second allowed from one client address. */
  FAILED_AUTH_PER_SECOND: PositiveIntFromEnv(50),
  /** Refused-token requests one client address may send in a burst. */
  FAILED_AUTH_BURST: PositiveIntFromEnv(300),
  /** How long a token lookup is trusted before the database is asked again. */
  AUTH_CACHE_TTL_MS: PositiveIntFromEnv(30_000),
  /** Live API tokens (not revoked, not expired) one tenant may hold; past it `POST /tokens` is 429 `tokens_quota_exceeded`. */
  TOKENS_PER_TENANT: PositiveIntFromEnv(100),
  /** How often each token's `last_used_at` is written (the uses seen since, in one batch). */
  TOKEN_USAGE_FLUSH_MS: PositiveIntFromEnv(30_000),
  /** Connections kept open to each replica of each internal service, for the API's reads and writes. */
  UPSTREAM_CONNECTIONS: PositiveIntFromEnv(64),
  /** Connections to each replica of each service for uploads and downloads (a pool apart, so that files never starve the API). */
  UPSTREAM_STREAM_CONNECTIONS: PositiveIntFromEnv(16),
  /** Requests one tenant may have in flight to the services through this gateway; unset: a quarter of UPSTREAM_CONNECTIONS. Past it, 429 `rate_limited`. */
  UPSTREAM_TENANT_IN_FLIGHT: z.coerce.number().int().positive().optional(),
  /** Uploads and downloads one tenant may have in flight; unset: a quarter of UPSTREAM_STREAM_CONNECTIONS. Past it, 429 `rate_limited`. */
  UPSTREAM_TENANT_STREAMS: z.coerce.number().int().positive().optional(),
  /** How long a request over its tenant's share waits, behind that tenant's own, for one of them to end; then 429. `0`: refused at once. */
  UPSTREAM_TENANT_WAIT_MS: z.coerce.number().int().min(0).default(5000),
  /** The slowest a request or response body may move through the gateway (Apache mod_reqtimeout's `MinRate`): fewer bytes over a window cut it off. */
  BODY_MIN_BYTES_PER_SECOND: PositiveIntFromEnv(500),
  BODY_RATE_WINDOW_MS: PositiveIntFromEnv(20_000),
  /** Services that wait on workflows answer before this (their waits default to it minus a margin). */
  UPSTREAM_TIMEOUT_MS: PositiveIntFromEnv(GATEWAY_UPSTREAM_TIMEOUT_MS),
  /** How long an Idempotency-Key and its answer are kept (at least 24 hours). */
  IDEMPOTENCY_RETENTION_MS: z.coerce.number().int().min(24 * 60 * 60 * 1000).default(24 * 60 * 60 * 1000),
  LOG_LEVEL: LogLevel,
  ...TracingSettings.shape,
});

/** A tenant's share of a pool: given, or a quarter of it; below the whole pool either way, so that another tenant always finds a connection. */
const WithTenantShares = GatewayConfigSchema.transform((config, ctx) => {
  const share = (given: number | undefined, pool: number, name: string, poolName: string) => {
    const value = given ?? Math.max(1, Math.floor(pool / 4));
    if (pool > 1 && value >= pool) ctx.addIssue({ code: 'custom', path: [name], message: `must be below ${poolName} (${pool}): one tenant never holds every connection` });
    return value;
  };
  return {
    ...config,
    UPSTREAM_TENANT_IN_FLIGHT: share(config.UPSTREAM_TENANT_IN_FLIGHT, config.UPSTREAM_CONNECTIONS, 'UPSTREAM_TENANT_IN_FLIGHT', 'UPSTREAM_CONNECTIONS'),
    UPSTREAM_TENANT_STREAMS: share(config.UPSTREAM_TENANT_STREAMS, config.UPSTREAM_STREAM_CONNECTIONS, 'UPSTREAM_TENANT_STREAMS', 'UPSTREAM_STREAM_CONNECTIONS'),
  };
});

export type GatewayConfig = z.infer<typeof WithTenantShares>;

export function loadGatewayConfig(env: Record<string, string | undefined>): GatewayConfig {
  return parseConfig(WithTenantShares, env);
}
