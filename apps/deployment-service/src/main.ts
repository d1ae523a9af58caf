import { EventOutbox, OutboxRelay } from '@envengine/event-log';
import { PlacementClient } from '@envengine/service-clients';
import { PeriodicSweep, privateApiOf, runInternalService, type Logger, temporalClientConnectionOptions, temporalClientInterceptors } from '@envengine/service-kit';
import { ingestMetrics, sweepMetrics, type SweepMetrics } from '@envengine/service-metrics';
import { BundleRepository, DeploymentRepository, MaterializationRepository, type BundleNamed } from '@envengine/deployment-data';
import { loadDeploymentConfig } from './config.ts';
import { DeploymentsService } from './deployments/deployments.service.ts';
import { WorkflowStarter } from './deployments/workflow-starter.ts';
import { deploymentInternalApi } from './internal-api.ts';
import { deploymentPublicApi } from './public-api.ts';

const config = loadDeploymentConfig(process.env);
const placement = new PlacementClient({ origins: config.PLACEMENT_SERVICE_URL, credential: config.INTERNAL_CREDENTIAL });
const workflows = new WorkflowStarter({
  connection: temporalClientConnectionOptions(config),
  namespace: config.TEMPORAL_NAMESPACE,
  taskQueue: config.DEPLOYMENTS_TASK_QUEUE,
  waitMs: config.WORKFLOW_WAIT_MS,
  interceptors: temporalClientInterceptors(config),
});

let bundleSweep: PeriodicSweep | undefined;
let relay: OutboxRelay | undefined;
/** Bundles looked at per transaction batch of the sweep. */
const BUNDLE_SWEEP_BATCH = 100;

/**
 * Removes the bundles no deployment names, a retention after their last use, so that a
 * tenant's stored bytes (its `bundle_bytes` quota) count only what it deploys. Every
 * replica sweeps; the removal is one transaction per bundle, so they never clash.
 */
function unusedBundleSweep(bundles: BundleRepository, deployments: DeploymentRepository, log: Logger, metrics: SweepMetrics): PeriodicSweep {
  const retentionMs = config.BUNDLE_RETENTION_SECONDS * 1000;
  // Ten looks a retention, between a second and ten minutes apart.
  const intervalMs = Math.min(10 * 60_000, Math.max(1_000, Math.floor(retentionMs / 10)));
  return new PeriodicSweep(
    'bundles',
    intervalMs,
    async () => {
      // Until none is left: one tenant's pile of unused bundles must not hold back another's removal to a later pass.
      const cutoff = new Date(Date.now() - retentionMs);
      const named: BundleNamed = (tenantId, bundleRef, session) => deployments.namesBundle(tenantId, bundleRef, session);
      for (;;) {
        const { looked, removed, bytes } = await bundles.removeUnreferenced(cutoff, named, BUNDLE_SWEEP_BATCH);
        if (removed > 0) log.info({ removed, bytes }, 'removed bundles no deployment names');
        if (looked < BUNDLE_SWEEP_BATCH) return;
      }
    },
    log,
    metrics,
  );
}

// The deployment scope's API: bundles, deployments and assets. Ingest and activation run
// as Temporal workflows in the workflow-worker, which shares this scope's collections.
await runInternalService({
  service: 'deployment-service',
  config,
  routes: async ({ mongo, log, metrics }) => {
    const outbox = new EventOutbox(mongo);
    // The scope's events (written here and by the workflow-worker, which shares this
    // database) go to the audit log, which the placement-service keeps. The worker cannot
    // nudge this relay: its poll finds the worker's rows.
    relay = new OutboxRelay({ outbox, connection: mongo, log, publish: async (events) => void (await placement.publishEvents(events)) });
    const bundles = new BundleRepository(mongo);
    const deployments = new DeploymentRepository(mongo, bundles, outbox);
    const materializations = new MaterializationRepository(mongo, outbox);
    await Promise.all([outbox.ensureIndexes(), relay.ensureIndexes(), bundles.ensureIndexes(), deployments.ensureIndexes(), materializations.ensureIndexes()]);
    relay.start();
    bundleSweep = unusedBundleSweep(bundles, deployments, log, sweepMetrics(metrics));
    bundleSweep.start();

    const { api, streamingApi } = deploymentPublicApi({
      deployments: new DeploymentsService(deployments, placement, workflows, ingestMetrics(metrics)),
      placement,
      deploymentRows: deployments,
      materializations,
      bundles,
      bundleLimits: { bytes: config.BUNDLE_LIMIT_BYTES, unpackedBytes: config.BUNDLE_MAX_UNPACKED_MB * 1024 * 1024, files: config.BUNDLE_MAX_FILES },
    });
    return {
      api,
      streamingApi,
      privateApi: privateApiOf(deploymentInternalApi({ bundles, deployments, materializations }), { internal: config.INTERNAL_CREDENTIAL }),
    };
  },
  onStop: async () => {
    bundleSweep?.stop();
    await relay?.stop();
    await workflows.close();
    await placement.close();
  },
});
