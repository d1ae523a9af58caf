import { createMetricsRegistry, exposition } from '@envengine/service-metrics';
import { connectRedis } from '@envengine/redis-connections';
import { ApiTokenRepository, TOKEN_REVOKED_CHANNEL } from '@envengine/api-tokens';
import { EnvironmentAccess } from '@envengine/contracts';
import { EventOutbox, OutboxRelay } from '@envengine/event-log';
import { PlacementClient } from '@envengine/service-clients';
import { connectMongo, createLogger, pingMongo, startHealthServer, startHttpServer, stopOnSignals } from '@envengine/service-kit';
import { startTracing } from '@envengine/tracing';
import { TokenAuthenticator } from './auth/token-authenticator.ts';
import { IdempotencyStore } from './idempotency/idempotency-store.ts';
import { loadGatewayConfig } from './config.ts';
import { createGatewayApp } from './gateway-app.ts';
import { UpstreamForwarder } from './proxy/upstream-forwarder.ts';
import { TenantInFlight } from './fairness/tenant-in-flight.ts';
import { SharedRateLimiter } from './rate-limit/shared-rate-limiter.ts';
import { TokenBucketLimiter } from './rate-limit/token-bucket-limiter.ts';
import { tokenOperations } from './tokens/token-operations.ts';
import { TokenUsage } from './tokens/token-usage.ts';
import { TokensService } from './tokens/tokens.service.ts';

const config = loadGatewayConfig(process.env);
const tracing = startTracing('gateway', config);
const log = createLogger('gateway', config.LOG_LEVEL);

const mongo = await connectMongo({ url: config.MONGO_URL, dbName: config.MONGO_DB, service: 'gateway' }, log);
const outbox = new EventOutbox(mongo);
const tokens = new ApiTokenRepository(mongo, outbox);

const placement = new PlacementClient({ origins: config.PLACEMENT_SERVICE_URL, credential: config.INTERNAL_CREDENTIAL });
// The tokens' events (token.created, token.revoked), which the admin command writes to this
// database's outbox and exits: the relay of the gateways (one at a time, by its lease)
// finds them at its poll and hands them to the audit log, which the placement-service keeps.
const relay = new OutboxRelay({ outbox, connection: mongo, log, publish: async (events) => void (await placement.publishEvents(events)) });
await Promise.all([tokens.ensureIndexes(), relay.ensureIndexes()]);
// API tokens live in the gateway's database; pool tokens belong to the placement scope's pools.
const authenticator = new TokenAuthenticator(
  {
    findActiveByHash: async (tokenHash, kind) => {
      if (kind === 'api') {
        const found = await tokens.findActiveByHash(tokenHash);
        // Made once per lookup and cached: each request only reads them.
        return found && { tenantId: found.tenantId, tokenId: found.tokenId, scopes: new Set(found.scopes), environments: new EnvironmentAccess(found.environments), expiresAt: found.expiresAt };
      }
      const owner = await placement.poolTokenOwner(tokenHash);
      return owner && { tenantId: owner.tenant_id, tokenId: owner.credential_id, poolCredentialId: owner.credential_id, scopes: new Set(), environments: EnvironmentAccess.ALL, expiresAt: null };
    },
  },
  config.AUTH_CACHE_TTL_MS,
);
const idempotency = new IdempotencyStore(mongo, config.IDEMPOTENCY_RETENTION_MS, config.UPSTREAM_TIMEOUT_MS + 5000);
await idempotency.ensureIndexes();

// Revocations reach every gateway at once; the cache TTL bounds any that are missed.
// The subscription is queued until Redis answers and renewed by ioredis on reconnect.
const subscriber = connectRedis(config.REDIS_URL, { maxRetriesPerRequest: null });
subscriber.on('error', (error: Error) => log.warn({ err: error.message }, 'redis subscriber error'));
subscriber.on('message', (_channel: string, tokenHash: string) => authenticator.forget(tokenHash));
subscriber.subscribe(TOKEN_REVOKED_CHANNEL).catch((error: Error) => log.error({ err: error.message }, 'subscribe failed'));

// Rate limits shared by every gateway (buckets in Redis). A call fails at once while Redis
// is away (no offline queue) or after a second, and the request is then limited by this
// gateway's own buckets instead of waiting.
const rateLimits = connectRedis(config.REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: 1000 });
rateLimits.on('error', () => undefined); // reported once per outage below, not per reconnect attempt
const rateLimitRedis = (state: 'lost' | 'back', error?: Error) =>
  state === 'lost'
    ? log.warn({ err: error?.message }, 'rate limits: Redis unreachable; each gateway limits on its own until it returns')
    : log.info('rate limits: shared through Redis again');

const forwarder = new UpstreamForwarder(
  {
    placement: config.PLACEMENT_SERVICE_URL,
    deployment: config.DEPLOYMENT_SERVICE_URL,
    secrets: config.SECRETS_SERVICE_URL,
  },
  config.INTERNAL_CREDENTIAL,
  {
    connections: config.UPSTREAM_CONNECTIONS,
    streamConnections: config.UPSTREAM_STREAM_CONNECTIONS,
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    bodyRate: { minBytesPerSecond: config.BODY_MIN_BYTES_PER_SECOND, windowMs: config.BODY_RATE_WINDOW_MS },
  },
);

const tokenUsage = new TokenUsage(
  (usedAt) => tokens.recordUse(usedAt),
  (error) => log.warn({ err: error.message }, "could not record tokens' last use; kept for the next write"),
);
tokenUsage.start(config.TOKEN_USAGE_FLUSH_MS);
const tokensService = new TokensService(
  tokens,
  async (tokenHash) => {
    authenticator.forget(tokenHash);
    // The other gateways drop it at once; were Redis away, their cache's TTL bounds it.
    await rateLimits.publish(TOKEN_REVOKED_CHANNEL, tokenHash).catch((error: Error) => log.warn({ err: error.message }, 'could not broadcast a token revocation'));
  },
  config.TOKENS_PER_TENANT,
);

const metrics = createMetricsRegistry('gateway');
const readiness = {
  mongodb: () => pingMongo(mongo),
  redis: async () => subscriber.status === 'ready',
};
const app = createGatewayApp({
  tracer: tracing.enabled ? tracing.tracer : undefined,
  metrics,
  timeRequests: config.HTTP_METRICS === 'on',
  log,
  authenticator,
  limiter: new SharedRateLimiter(rateLimits, 'api', config.RATE_LIMIT_PER_SECOND, config.RATE_LIMIT_BURST, new TokenBucketLimiter(config.RATE_LIMIT_PER_SECOND, config.RATE_LIMIT_BURST), rateLimitRedis),
  workerLimiter: new SharedRateLimiter(
    rateLimits,
    'worker',
    config.WORKER_RATE_LIMIT_PER_SECOND,
    config.WORKER_RATE_LIMIT_BURST,
    new TokenBucketLimiter(config.WORKER_RATE_LIMIT_PER_SECOND, config.WORKER_RATE_LIMIT_BURST),
    rateLimitRedis,
  ),
  failedAuthLimiter: new TokenBucketLimiter(config.FAILED_AUTH_PER_SECOND, config.FAILED_AUTH_BURST),
  forwarder,
  inFlight: { api: new TenantInFlight(config.UPSTREAM_TENANT_IN_FLIGHT), stream: new TenantInFlight(config.UPSTREAM_TENANT_STREAMS) },
  inFlightWaitMs: config.UPSTREAM_TENANT_WAIT_MS,
  gatewayOperations: tokenOperations(tokensService),
  tokenUsage,
  idempotency,
  idempotencyWaitMs: config.UPSTREAM_TIMEOUT_MS,
  readiness,
  jsonBodyLimitBytes: config.JSON_BODY_LIMIT_BYTES,
  bundleBodyLimitBytes: config.BUNDLE_BODY_LIMIT_BYTES,
});

const server = await startHttpServer(app, config.HOST, config.PORT);
const metricsServer = await startHealthServer({ service: 'gateway', host: config.METRICS_HOST, port: config.METRICS_PORT, readiness, metrics: () => exposition(metrics) });
log.info({ port: server.port, metrics_port: metricsServer.port, metrics_host: config.METRICS_HOST }, 'gateway listening');
// Once the gateway serves: rows left pending (the admin command's, a previous run's) leave now too.
relay.start();

stopOnSignals(log, async () => {
  await server.close();
  await metricsServer.close();
  await forwarder.close();
  await tokenUsage.stop();
  // The batch in hand is sent before the client it goes through is closed.
  await relay.stop();
  await placement.close();
  subscriber.disconnect();
  rateLimits.disconnect();
  await mongo.close();
  await tracing.shutdown();
});
