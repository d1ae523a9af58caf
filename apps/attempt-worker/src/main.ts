import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { relative } from 'node:path';
import { Worker, type Job } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import { connectRedis } from '@envengine/redis-connections';
import { ATTEMPT_QUEUE_PREFIX, attemptQueueKeyName, LOCAL_ATTEMPT_QUEUE, parseAttemptJob, connectPoolRedis, sendScriptsByShaOnly } from '@envengine/attempt-queues';
import { ENVIRONMENT_RETIRED_CHANNEL, EnvironmentRetired, WORKER_EXIT_CODES, type WorkerIdentity } from '@envengine/contracts';
import { createLogger, startHealthServer, stopOnSignals } from '@envengine/process-kit';
import { createMetricsRegistry, exposition, workerMetrics } from '@envengine/service-metrics';
import { startTracing, TRACER_NAME } from '@envengine/tracing';
import { BundleCache, claimCacheDirectory, releaseCacheDirectory, type BundleCacheEvent, type BundleSource } from './bundles/bundle-cache.ts';
import { loadWorkerConfig, type WorkerConfig } from './config.ts';
import { nodeVersionProblem } from './runtime-check.ts';
import { AttemptRunner } from './execution/attempt-runner.ts';
import { claimSpoolDirectory } from './execution/spool-directory.ts';
import { LeaseKeeper } from './execution/lease-keeper.ts';
import { AssetCgroups, assetMemoryCapBytes } from './sandbox/asset-cgroups.ts';
import { checkSandbox, spawnAssetChild, type SandboxSettings } from './sandbox/os-sandbox.ts';
import { buildSeccompFilter } from './sandbox/seccomp-filter.ts';
import { WarmSandboxes } from './sandbox/warm-sandboxes.ts';
import { WorkerApiClient } from './worker-api/worker-api-client.ts';
import { EndpointGuard } from './storage/endpoint-guard.ts';

const BUNDLE_CACHE_EVENT_TEXT: Record<Exclude<BundleCacheEvent, 'hit'>, string> = {
  fetched: 'bundle fetched',
  'refused-tampered': 'cached bundle failed its digest check; fetching it again',
  'refused-too-large': 'bundle refused: it unpacks past the limits; nothing of it was kept',
  evicted: 'bundle removed from the cache (least recently used, over BUNDLE_CACHE_MAX_MB)',
  retired: 'bundle removed from the cache: every environment that ran it was deleted',
};

/** This file as a hint names it: relative to the current folder when under it, else as it is; the unpacked package's when unknown. */
function shownEntry(file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  const shown = relative(process.cwd(), file);
  return shown === '' || shown.startsWith('..') ? file : shown;
}

// Before anything else: on another Node the worker would start, then fail every attempt.
const nodeProblem = nodeVersionProblem(process.versions.node, shownEntry(process.argv[1]));
if (nodeProblem) {
  process.stderr.write(`${nodeProblem}\n`);
  process.exit(WORKER_EXIT_CODES.configuration);
}

let config: WorkerConfig;
try {
  config = loadWorkerConfig(process.argv.slice(2), process.env);
} catch (error) {
  process.stderr.write(`${(error as Error).message}\n`);
  process.exit(WORKER_EXIT_CODES.configuration);
}
const tracing = startTracing('attempt-worker', config);
const log = createLogger('attempt-worker', config.LOG_LEVEL);
const identity: WorkerIdentity = {
  id: `${config.mode}-${randomBytes(8).toString('hex')}`,
  name: config.WORKER_NAME,
  executor: config.mode === 'local' ? 'local' : 'remote',
  concurrency: config.CONCURRENCY,
  sandbox: config.SANDBOX,
};
// A cgroup per asset child: the engine's runner, which serves every tenant, runs none without one.
const cgroupsSetting = config.ASSET_CGROUPS ?? (config.mode === 'local' ? 'required' : 'auto');
const cgroups =
  cgroupsSetting === 'off'
    ? { problem: 'ASSET_CGROUPS=off' }
    : AssetCgroups.open({ memoryBytes: assetMemoryCapBytes(config.ASSET_MEMORY_MB, config.ASSET_TMP_MB), maxPids: config.ASSET_MAX_PROCESSES, cpuCores: config.ASSET_CPU_CORES });
if ('problem' in cgroups && cgroupsSetting === 'required') {
  log.fatal(
    { asset_cgroups: cgroupsSetting },
    `Each asset's child needs a cgroup of its own for its memory, processes and CPU, and this host gives none: ${cgroups.problem}. Run the worker as root where cgroup v2 (or v1's memory, pids and cpu hierarchies) is mounted writable, or in a cgroup delegated to it (systemd: Delegate=yes); or set ASSET_CGROUPS=auto to run without them, which lets one asset's files in memory and its processes reach the host's limits.`,
  );
  process.exit(WORKER_EXIT_CODES.configuration);
}
if ('problem' in cgroups && cgroupsSetting === 'auto') {
  log.warn({ asset_cgroups: cgroupsSetting }, `assets run without cgroups of their own (${cgroups.problem}): rlimits and /tmp's size are their only memory and process caps`);
}
const assetCgroups = 'problem' in cgroups ? null : cgroups;
if (assetCgroups) log.info({ cgroup_version: assetCgroups.version }, 'each asset runs in a cgroup of its own');
// A seccomp filter in each sandbox (none without a sandbox): the engine's runner runs none without one.
const seccompSetting = config.SANDBOX === 'off' ? 'off' : (config.ASSET_SECCOMP ?? (config.mode === 'local' ? 'required' : 'auto'));
const seccomp = seccompSetting === 'off' ? { problem: 'ASSET_SECCOMP=off' } : buildSeccompFilter();
if ('problem' in seccomp && seccompSetting === 'required') {
  log.fatal(
    { asset_seccomp: seccompSetting },
    `Each asset's sandbox needs a seccomp filter, and this host cannot build one: ${seccomp.problem}. Install Debian's python3-seccomp (apt-get install python3-seccomp), which builds it at start; or set ASSET_SECCOMP=auto to run without it, which leaves tenants' code every system call the kernel gives an unprivileged user.`,
  );
  process.exit(WORKER_EXIT_CODES.configuration);
}
if ('problem' in seccomp && seccompSetting === 'auto') {
  log.warn({ asset_seccomp: seccompSetting }, `assets run without a seccomp filter (${seccomp.problem}; apt-get install python3-seccomp gives one): every system call the kernel gives an unprivileged user is open to them`);
}
const seccompFilter = 'filter' in seccomp ? seccomp.filter : null;
if (seccompFilter) log.info({ seccomp_filter_bytes: seccompFilter.length }, 'each asset runs under a seccomp filter');
// The children's whole environment: never the worker's own, which holds its credentials.
const sandbox: SandboxSettings = {
  mode: config.SANDBOX,
  memoryMb: config.ASSET_MEMORY_MB,
  cpuSeconds: config.ASSET_CPU_SECONDS,
  tmpMb: config.ASSET_TMP_MB,
  env: { TZ: 'UTC', LANG: 'C.UTF-8' },
  cgroups: assetCgroups,
  seccompFilter,
};
// Tenants' code never runs unsandboxed by accident: a sandbox that cannot start here stops the worker.
// The bundle cache is this process's alone (it evicts): another live worker's directory is not shared.
let bundleCacheDir: string;
try {
  bundleCacheDir = await claimCacheDirectory(config.BUNDLE_CACHE_DIR);
} catch (error) {
  log.fatal({ bundle_cache_dir: config.BUNDLE_CACHE_DIR }, (error as Error).message);
  process.exit(WORKER_EXIT_CODES.configuration);
}
if (bundleCacheDir !== config.BUNDLE_CACHE_DIR) log.info({ bundle_cache_dir: bundleCacheDir }, `${config.BUNDLE_CACHE_DIR} is another running worker's: using ${bundleCacheDir}`);
const sandboxProblem = checkSandbox(sandbox, bundleCacheDir, process.env.PATH);
const spoolDirectory = await claimSpoolDirectory(config.SPOOL_DIR);
if (sandboxProblem) {
  log.fatal({ sandbox: config.SANDBOX }, sandboxProblem);
  process.exit(WORKER_EXIT_CODES.configuration);
}
if (config.SANDBOX === 'off') {
  log.warn({ sandbox: 'off' }, "SANDBOX=off: tenants' code runs under Node's permission model alone, which is no protection against hostile code");
}

// The engine's runner connects to tenants' object stores from the engine host: never to its network.
const endpointGuard = config.mode === 'local' ? new EndpointGuard(config.STORAGE_ENDPOINTS_ALLOWED) : undefined;

const api = new WorkerApiClient(
  config.mode === 'local'
    ? { kind: 'engine', placementUrls: config.PLACEMENT_SERVICE_URL, deploymentUrls: config.DEPLOYMENT_SERVICE_URL, internalCredential: config.INTERNAL_CREDENTIAL }
    : { kind: 'pool', gatewayUrl: config.API_URL, token: config.POOL_TOKEN },
);
// A pool worker's tenant is its token's; the gateway ignores what is named here.
const poolTenant = config.mode === 'pool' ? config.POOL_QUEUE.slice('attempts-'.length) : undefined;
const sandboxes = new WarmSandboxes({
  capacity: config.WARM_SANDBOXES ?? config.CONCURRENCY,
  idleMs: config.WARM_SANDBOX_IDLE_MS,
  fork: (bundleRoot, egress) => spawnAssetChild(sandbox, bundleRoot, egress),
});
/**
 * A pool credential that the engine refuses (revoked, or never issued) cannot become good
 * again: the worker says so once and exits with EX_NOPERM, instead of retrying forever.
 */
let refused = false;
/** What to close on a refusal, added as it is made (the queue's connection and worker). */
const closeOnRefusal: Array<() => void> = [];
const credentialRefused = (where: 'worker API' | 'Redis') => {
  if (refused) return;
  refused = true;
  log.fatal(
    { exit_code: WORKER_EXIT_CODES.credentialRefused, refused_by: where },
    `the ${where} refused this worker's pool credential: it was revoked or is not known to the engine. Create a new one (envctl pool credentials create) and start the worker with it`,
  );
  leases.stopAll('drain');
  leases.stop();
  sandboxes.close();
  for (const close of closeOnRefusal) close();
  log.flush(() => process.exit(WORKER_EXIT_CODES.credentialRefused));
};
const leases = new LeaseKeeper(api, identity, log, config.HEARTBEAT_INTERVAL_MS, poolTenant, {
  onCredentialRefused: () => credentialRefused('worker API'),
  // The queue's connection, made below, before the first beat.
  canTakeWork: () => connection.status === 'ready',
});
// Checked before any job is taken: a refused credential stops the worker at once.
if (!(await leases.credentialAccepted())) credentialRefused('worker API');
// One bundle cache on disk, by digest, bounded; one runner per tenant, which fetches a
// missing bundle with the tenant's identity (the engine's runner serves every tenant).
const bundleCache = new BundleCache(
  bundleCacheDir,
  { maxUnpackedBytes: config.BUNDLE_MAX_UNPACKED_MB * 1024 * 1024, maxFiles: config.BUNDLE_MAX_FILES, maxCacheBytes: config.BUNDLE_CACHE_MAX_MB * 1024 * 1024 },
  (event, bundleRef) =>
    event === 'hit'
      ? log.debug({ bundle_ref: bundleRef }, 'bundle cache hit')
      : log.info({ bundle_ref: bundleRef, event }, BUNDLE_CACHE_EVENT_TEXT[event]),
);
const runners = new Map<string, AttemptRunner>();
const runnerFor = (tenantId: string): AttemptRunner => {
  let runner = runners.get(tenantId);
  if (!runner) {
    const bundles: BundleSource = (bundleRef, environmentId) => bundleCache.open(bundleRef, (ref) => api.bundle(tenantId, ref), `${tenantId}/${environmentId}`);
    runner = new AttemptRunner(api, bundles, leases, identity, log, {
      assetTimeoutMs: config.ASSET_TIMEOUT_MS,
      sandbox,
      sandboxes,
      logFlushMs: 250,
      endpointGuard,
      tracer: tracing.tracer,
      spoolDirectory,
      maxMaterializationBytes: config.MATERIALIZATION_MAX_MB * 1024 * 1024,
    });
    runners.set(tenantId, runner);
  }
  return runner;
};

// A pool user may EVALSHA the engine's loaded scripts only, never EVAL.
if (config.mode === 'pool') sendScriptsByShaOnly();
// A pool worker authenticates as its credential's user only: a REDIS_URL carrying another
// credential is refused rather than silently preferred (ioredis lets the URL's win).
// One server, or a Redis Cluster when REDIS_URL lists its nodes.
const connection =
  config.mode === 'pool'
    ? connectPoolRedis(config.REDIS_URL, { username: config.REDIS_USERNAME, password: config.REDIS_PASSWORD })
    : connectRedis(config.REDIS_URL, { maxRetriesPerRequest: null });
// One line per outage (ioredis reports every reconnect attempt), and one when it is back.
let redisDown = false;
const onRedisError = (error: Error) => {
  if (config.mode === 'pool' && /WRONGPASS/.test(error.message)) credentialRefused('Redis');
  else if (!redisDown) {
    redisDown = true;
    log.warn({ err: error.message }, 'cannot reach Redis: taking no attempts and not reported live until it answers');
  }
};
connection.on('error', onRedisError);
// A cluster reports a node's refusal (a revoked pool user) on the node, not as its own error.
connection.on('node error', onRedisError);
connection.on('ready', () => {
  if (!redisDown) return;
  redisDown = false;
  log.info({}, 'Redis answers again: taking attempts');
});

// The engine's runner hears of every environment torn down, and drops the bundles only it
// ran from its cache. The subscription is renewed by ioredis on reconnect; one missed
// leaves those bundles to the cache's bound.
const retirements = config.mode === 'local' ? connectRedis(config.REDIS_URL, { maxRetriesPerRequest: null }) : undefined;
if (retirements) {
  retirements.on('error', () => undefined); // the queue's connection reports the outage
  retirements.on('message', (_channel: string, text: string) => {
    let retired: EnvironmentRetired;
    try {
      retired = EnvironmentRetired.parse(JSON.parse(text));
    } catch {
      log.warn({ channel: ENVIRONMENT_RETIRED_CHANNEL }, 'an environment retirement that is not one was ignored');
      return;
    }
    bundleCache.retire(`${retired.tenant_id}/${retired.environment_id}`).catch((error: Error) => log.warn({ err: error.message }, 'could not drop the bundles of a deleted environment'));
  });
  retirements.subscribe(ENVIRONMENT_RETIRED_CHANNEL).catch((error: Error) => log.error({ err: error.message }, 'subscribe failed'));
}

const metricsRegistry = createMetricsRegistry('attempt-worker');
const metrics = workerMetrics(metricsRegistry);
const queueName = config.mode === 'local' ? LOCAL_ATTEMPT_QUEUE : config.POOL_QUEUE;
const worker = new Worker(
  attemptQueueKeyName(queueName),
  async (job: Job) => {
    const payload = parseAttemptJob(job.data);
    const result = await runnerFor(payload.tenant_id).run(payload.tenant_id, payload.attempt_id);
    metrics.attemptsRun.inc({ result });
    log.info({ attempt_id: payload.attempt_id, run_id: payload.run_id, result }, 'attempt done');
    return result;
  },
  {
    connection,
    prefix: ATTEMPT_QUEUE_PREFIX,
    concurrency: config.CONCURRENCY,
    autorun: true,
    // Tracing on: each job is a consumer span continuing the trace of the request that queued it.
    telemetry: tracing.enabled ? new BullMQOtel({ tracerName: TRACER_NAME }) : undefined,
  },
);
// While Redis is out of reach the queue reports each reconnect: the outage is said once above.
worker.on('error', (error: Error) => {
  if (!redisDown) log.warn({ err: error.message }, 'queue worker error');
});
closeOnRefusal.push(() => void worker.close(true).catch(() => undefined), () => connection.disconnect());
worker.on('failed', (job, error) => log.warn({ job_id: job?.id, err: error.message }, 'attempt job failed; the dispatcher offers it again'));
leases.start();

const server = await startHealthServer({
  service: 'attempt-worker',
  host: config.HOST,
  port: config.PORT,
  readiness: { redis: async () => connection.status === 'ready', worker_api: async () => leases.reachesWorkerApi },
  metrics: () => exposition(metricsRegistry),
});
log.info({ port: server.port, queue: queueName, mode: config.mode, worker: identity.id, concurrency: config.CONCURRENCY }, 'attempt-worker ready');

stopOnSignals(log, async () => {
  // Drain: take no new attempts, let the running ones finish until the deadline, then
  // hand the rest back (they are queued again for another worker).
  leases.draining = true;
  const closing = worker.close();
  const deadline = new Promise<'deadline'>((resolve) => setTimeout(() => resolve('deadline'), config.DRAIN_TIMEOUT_MS).unref());
  if ((await Promise.race([closing.then(() => 'closed' as const), deadline])) === 'deadline') {
    log.warn({ running: leases.size }, 'drain deadline passed: handing running attempts back');
    leases.stopAll('drain');
    await closing;
  }
  leases.stop();
  if (await leases.farewell()) log.info({ worker: identity.id }, poolTenant ? 'stopped gracefully: left the pool' : "stopped gracefully: left the engine's runners");
  sandboxes.close();
  await server.close();
  retirements?.disconnect();
  await releaseCacheDirectory(bundleCacheDir);
  await rm(spoolDirectory, { recursive: true, force: true });
  // Children's cgroups still in use are left for the next start's sweep.
  assetCgroups?.close();
  await api.close();
  connection.disconnect();
  await tracing.shutdown();
}, config.DRAIN_TIMEOUT_MS + 10_000, () => {
  // A second Ctrl-C: the running attempts are handed back now (queued again, not lost), and the stop goes on.
  leases.stopAll('drain');
});
