import { Client, Connection } from '@temporalio/client';
import { BullMQOtel } from 'bullmq-otel';
import { ENVIRONMENT_RETIRED_CHANNEL, scopeTaskQueue, type RecordedEvent } from '@envengine/contracts';
import { connectRedis } from '@envengine/redis-connections';
import { AuditLog, EventOutbox, OutboxRelay } from '@envengine/event-log';
import { TenantQuotas } from '@envengine/tenant-data';
import { AttemptQueueProducer, PoolAclRegistry, reapplyOnReady } from '@envengine/attempt-queues';
import { DeploymentClient, SecretResolverClient, SecretsClient } from '@envengine/service-clients';
import { PeriodicSweep, privateApiOf, runInternalService, temporalClientConnectionOptions, temporalClientInterceptors, temporalConnectionOptions, TtlCache } from '@envengine/service-kit';
import { ActivityWorker, installTemporalRuntime } from '@envengine/temporal-worker';
import { placementMetrics } from '@envengine/service-metrics';
import { TRACER_NAME, tracingConfigured } from '@envengine/tracing';
import { loadPlacementConfig } from './config.ts';
import { scheduleTickActivities } from './schedules/schedule-tick-activities.ts';
import { placementLifecycleActivities } from './environment-lifecycle/lifecycle-activities.ts';
import { LegacyTemporalSchedules } from '@envengine/environment-schedules';
import { EnvironmentRepository } from './environments/environment.repository.ts';
import { EnvironmentLifecycle } from './environment-lifecycle/environment-lifecycle.ts';
import { LifecycleWorkflows } from './environment-lifecycle/lifecycle-workflows.ts';
import { MaterializationPurge } from './environment-lifecycle/materialization-purge.ts';
import { PoolCredentialRepository } from './pool/pool-credential.repository.ts';
import { MaterializationReader } from './outputs/materialization-reader.ts';
import { PoolService } from './pool/pool.service.ts';
import { PoolStoreKeys } from './pool/pool-store-keys.ts';
import { startPoolGate } from './pool/pool-gate.ts';
import type { RedisGate } from '@envengine/redis-gate';
import { AttemptDispatcher } from './runs/attempt-dispatcher.ts';
import { tenantSlotCap } from './runs/runner-shares.ts';
import { countRunEvents } from './runs/run-metrics.ts';
import { DispatchReconciler } from './runs/dispatch-reconciler.ts';
import { LeaseReaper } from './runs/lease-reaper.ts';
import { RunRepository } from './runs/run.repository.ts';
import { AttemptLogRepository } from './runs/attempt-log.repository.ts';
import { WorkerRegistry } from './runs/worker-registry.ts';
import { ScheduleTicker } from './schedules/schedule-ticker.ts';
import { SchedulesService } from './schedules/schedules.service.ts';
import { StoredSchedulesRepository } from './schedules/stored-schedules.repository.ts';
import { TickLoops } from './schedules/tick-loops.ts';
import { RunsService } from './runs/runs.service.ts';
import { WorkerApiService } from './worker-api/worker-api.service.ts';
import { EngineObjectStore } from './storage/engine-object-store.ts';
import { placementInternalApi } from './internal-api.ts';
import { placementPublicApi } from './public-api.ts';
import { QuotasService } from './quotas/quotas.service.ts';
import { EngineNetworkGuard } from '@envengine/egress-rules';
import { WebhookDeliveryRepository } from './webhooks/webhook-delivery.repository.ts';
import { WebhookDispatch } from './webhooks/webhook-dispatch.ts';
import { WebhookRepository } from './webhooks/webhook.repository.ts';
import { WebhookSender } from './webhooks/webhook-sender.ts';
import { WebhooksService } from './webhooks/webhooks.service.ts';

const config = loadPlacementConfig(process.env);

// Commands fail at once while Redis is away (no offline queue): a run is then refused
// with 503 before anything is written, and the reconciler delivers what was stored.
const redis = connectRedis(config.REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false });
const deployments = new DeploymentClient({ origins: config.DEPLOYMENT_SERVICE_URL, credential: config.INTERNAL_CREDENTIAL });
const secrets = new SecretsClient({ origins: config.SECRETS_SERVICE_URL, credential: config.INTERNAL_CREDENTIAL });
const resolver = new SecretResolverClient({ origins: config.SECRETS_SERVICE_URL, credential: config.RESOLVER_CREDENTIAL }, 'placement-service');
const queues = new AttemptQueueProducer(redis, tracingConfigured(config) ? new BullMQOtel({ tracerName: TRACER_NAME }) : undefined);
// Lazy: the service starts and serves while Temporal is away; schedule calls then answer 503.
const temporalConnection = Connection.lazy(temporalClientConnectionOptions(config));
const temporal = new Client({ connection: temporalConnection, namespace: config.TEMPORAL_NAMESPACE, interceptors: temporalClientInterceptors(config) });
let sweeps: Array<{ start(): void; stop(): void }> = [];
let poolGate: RedisGate | undefined;
let relay: OutboxRelay | undefined;
let webhookDispatch: WebhookDispatch | undefined;
/** This scope's own activities (the tick loops' passes, the tear-down's and the expiry timer's steps on its data), served on its own task queue. */
let activityWorker: ActivityWorker | undefined;
/** The webhooks' queue worker blocks on Redis: a connection of its own, retrying for ever as BullMQ's workers need. */
const webhookRedis = connectRedis(config.REDIS_URL, { maxRetriesPerRequest: null });
/** How often streams whose queue job was lost (Redis flushed, a job failed) are offered again. */
const WEBHOOK_SWEEP_MS = 10_000;
/** How often a revoked pool credential's store keys that could not be taken away at once are tried again. */
const STORE_KEYS_SWEEP_MS = 60_000;
const engineStore = config.ENGINE_S3_URL
  ? new EngineObjectStore({
      endpoint: config.ENGINE_S3_URL,
      iamEndpoint: config.ENGINE_S3_IAM_URL ?? config.ENGINE_S3_URL,
      publicEndpoint: config.PUBLIC_S3_URL ?? config.ENGINE_S3_URL,
      region: config.ENGINE_S3_REGION,
      bucket: config.ENGINE_S3_BUCKET,
      admin: { accessKeyId: config.ENGINE_S3_ADMIN_ACCESS_KEY!, secretAccessKey: config.ENGINE_S3_ADMIN_SECRET_KEY! },
    })
  : undefined;

await runInternalService({
  service: 'placement-service',
  config,
  routes: async ({ mongo, log, metrics: registry }) => {
    redis.on('error', (error: Error) => log.warn({ err: error.message }, 'redis error'));
    const quotas = new TenantQuotas(mongo);
    const outbox = new EventOutbox(mongo);
    const auditLog = new AuditLog(mongo);
    const environments = new EnvironmentRepository(mongo, quotas, outbox);
    const runs = new RunRepository(mongo, environments, quotas, outbox);
    const workers = new WorkerRegistry(mongo);
    const logs = new AttemptLogRepository(mongo);
    const credentials = new PoolCredentialRepository(mongo, quotas, outbox);
    const storedSchedules = new StoredSchedulesRepository(mongo, config.SCHEDULE_TICK_SHARDS);
    const webhooks = new WebhookRepository(mongo, quotas, outbox);
    const webhookDeliveries = new WebhookDeliveryRepository(mongo);
    await Promise.all([outbox.ensureIndexes(), auditLog.ensureIndexes(config.EVENT_RETENTION_DAYS), quotas.ensureIndexes(), environments.ensureIndexes(), runs.ensureIndexes(), workers.ensureIndexes(), logs.ensureIndexes(), credentials.ensureIndexes(), storedSchedules.ensureIndexes(), webhooks.ensureIndexes(), webhookDeliveries.ensureIndexes()]);

    const acl = new PoolAclRegistry(redis);
    // ACL users live in Redis's memory: after a Redis restart they are made again from the rows.
    reapplyOnReady(redis, async () => (await credentials.allActive()).map((row) => ({
      username: row.redis_username,
      passwordSha256: row.redis_password_sha256,
      tenantId: row.tenant_id,
    })), log);

    const metrics = placementMetrics(registry, { queued: () => runs.queuedCounts(), liveWorkers: () => workers.liveCounts(config.ATTEMPT_LEASE_TTL_MS) });
    // The placement scope's own events go straight to the audit log, in this database too,
    // and are counted as they go: the run metrics' one observer (runs/run-metrics.ts).
    webhookRedis.on('error', (error: Error) => log.warn({ err: error.message }, 'redis error (webhook queue)'));
    const webhookGuard = new EngineNetworkGuard({ allowed: config.WEBHOOK_TARGETS_ALLOWED, dnsServers: config.WEBHOOK_DNS_SERVERS });
    webhookDispatch = new WebhookDispatch(
      webhookRedis,
      webhooks,
      webhookDeliveries,
      new WebhookSender(webhookGuard, config.WEBHOOK_TIMEOUT_MS),
      config.webhooksKeyring,
      { retry: { firstDelayMs: config.WEBHOOK_RETRY_FIRST_DELAY_MS, windowMs: config.WEBHOOK_RETRY_WINDOW_MS }, concurrency: config.WEBHOOK_DELIVERY_CONCURRENCY },
      metrics,
      log,
    );
    const dispatch = webhookDispatch;
    /** Every scope's events: into the audit log, then to the webhooks that want them. */
    const publishEvents = async (events: RecordedEvent[]) => {
      const stored = await auditLog.store(events);
      await dispatch.fanOut(events);
      return stored;
    };
    relay = new OutboxRelay({
      outbox,
      connection: mongo,
      log,
      publish: async (events) => {
        await publishEvents(events);
        countRunEvents(metrics, events);
      },
    });
    await relay.ensureIndexes();
    relay.start();
    webhookDispatch.start();
    const webhookSweep = new PeriodicSweep('webhooks', WEBHOOK_SWEEP_MS, () => dispatch.sweep(), log, metrics);
    // The engine runner's slots: the live runners' own count (each reports its CONCURRENCY), or the configured least.
    const runnerSlots = new TtlCache<number>({ ttlMs: 2_000, maxEntries: 1 });
    const runnerShares =
      config.LOCAL_FAIR_SHARE === 'off'
        ? null
        : async () => {
            const capacity = Math.max(config.LOCAL_RUNNER_SLOTS, await runnerSlots.get('local', () => workers.liveLocalSlots(config.ATTEMPT_LEASE_TTL_MS)));
            return { capacity, maxPerTenant: tenantSlotCap(capacity, config.LOCAL_MAX_PER_TENANT) };
          };
    const dispatcher = new AttemptDispatcher(runs, queues, log, runnerShares);
    sweeps = [new LeaseReaper(runs, dispatcher, log, config.ATTEMPT_LEASE_TTL_MS, metrics), new DispatchReconciler(runs, dispatcher, log, config.DISPATCH_RECONCILE_INTERVAL_MS, metrics), webhookSweep];
    for (const sweep of sweeps) sweep.start();
    const runsService = new RunsService(environments, runs, workers, logs, deployments, dispatcher, {
      queueReady: () => redis.status === 'ready',
      workerLivenessMs: config.ATTEMPT_LEASE_TTL_MS,
    });
    const lifecycle = new EnvironmentLifecycle(
      environments,
      runs,
      logs,
      dispatcher,
      new LifecycleWorkflows(temporal, temporalConnection, config.DEPLOYMENTS_TASK_QUEUE),
      log,
      { teardownWaitMs: config.TEARDOWN_WAIT_MS },
      (retired) => redis.publish(ENVIRONMENT_RETIRED_CHANNEL, JSON.stringify(retired)),
      engineStore ? (environmentId) => engineStore.retireEnvironmentUsers(environmentId) : undefined,
    );
    // In the background: the service serves while Temporal is still coming up.
    void lifecycle.resume().catch((error: Error) => log.warn({ err: error.message }, 'could not resume tear-downs and expiry timers at start-up'));
    const tickLoops = new TickLoops(temporal, config.DEPLOYMENTS_TASK_QUEUE, config.SCHEDULE_TICK_SHARDS, log);
    // In the background too: the loops' start waits for Temporal; a second replica's joins the running ones.
    void tickLoops.ensureRunning().catch((error: Error) => log.warn({ err: error.message }, 'could not start the schedule tick loops; the next schedule change or start-up does'));
    const schedules = new SchedulesService(environments, runs, storedSchedules, deployments, tickLoops);
    const ticker = new ScheduleTicker(storedSchedules, runsService, metrics, log);
    const purge = new MaterializationPurge(environments, engineStore, log);
    // In the background as well: it connects when Temporal answers.
    installTemporalRuntime(log);
    activityWorker = new ActivityWorker({
      connection: temporalConnectionOptions(config),
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: scopeTaskQueue(config.DEPLOYMENTS_TASK_QUEUE, 'placement'),
      activities: {
        ...scheduleTickActivities(ticker),
        ...placementLifecycleActivities({ environments, lifecycle, purge, schedules, legacySchedules: new LegacyTemporalSchedules(temporal) }),
      },
      traced: tracingConfigured(config),
      log,
    });
    activityWorker.start();
    const storeKeys = engineStore && new PoolStoreKeys(engineStore, credentials, environments, log);
    if (storeKeys) {
      const storeKeysSweep = new PeriodicSweep('store_keys', STORE_KEYS_SWEEP_MS, () => storeKeys.retireOutstanding(), log, metrics);
      storeKeysSweep.start();
      sweeps.push(storeKeysSweep);
    }
    const pool = new PoolService(credentials, runs, workers, acl, redis, log, config.ATTEMPT_LEASE_TTL_MS, config.PUBLIC_REDIS_URL, storeKeys);
    poolGate = await startPoolGate(
      redis,
      config.REDIS_URL,
      {
        host: config.POOL_GATE_HOST,
        port: config.POOL_GATE_PORT,
        maxConnections: config.POOL_GATE_MAX_CONNECTIONS,
        maxConnectionsPerUser: config.POOL_GATE_MAX_CONNECTIONS_PER_CREDENTIAL,
        maxBufferedReplyBytes: config.POOL_GATE_MAX_UNREAD_REPLY_BYTES,
        overBufferedTimeoutMs: config.POOL_GATE_UNREAD_TIMEOUT_MS,
        memoryBytesPerPool: config.POOL_REDIS_MEMORY_BYTES,
      },
      log,
    );
    log.info({ address: poolGate.address, public_url: config.PUBLIC_REDIS_URL }, 'pool gate listening');

    const api = placementPublicApi({
      environments,
      lifecycle,
      storageRoot: config.STORAGE_ROOT,
      runs: runsService,
      schedules,
      pool,
      quotas: new QuotasService(quotas, environments, runs, deployments, secrets, webhooks, credentials),
      workerApi: new WorkerApiService(runs, workers, logs, environments, dispatcher, deployments, resolver, {
        max_lines: config.ATTEMPT_LOG_MAX_LINES,
        max_chars: config.ATTEMPT_LOG_MAX_CHARS,
      }, metrics, storeKeys),
      outputs: new MaterializationReader(environments, runs, deployments, secrets, engineStore),
      auditLog,
      webhooks: new WebhooksService(mongo, webhooks, webhookDeliveries, outbox, webhookGuard, config.webhooksKeyring, { secretOverlapMs: config.WEBHOOK_SECRET_OVERLAP_HOURS * 3_600_000 }),
    });
    const internal = placementInternalApi({ environments, lifecycle, purge, pool, schedules, ticker, publishEvents });
    return { api, privateApi: privateApiOf(internal, { internal: config.INTERNAL_CREDENTIAL }) };
  },
  onStop: async () => {
    // First: a pass in flight ends while its database and queues are still open.
    await activityWorker?.stop();
    for (const sweep of sweeps) sweep.stop();
    await relay?.stop();
    await webhookDispatch?.stop();
    webhookRedis.disconnect();
    await poolGate?.close();
    await queues.close();
    redis.disconnect();
    await temporalConnection.close();
    await Promise.all([deployments.close(), resolver.close(), secrets.close()]);
  },
});
