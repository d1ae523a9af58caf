import { PlacementClient } from '@envengine/service-clients';
import { runInternalService, temporalClientConnectionOptions, temporalClientInterceptors } from '@envengine/service-kit';
import { ingestMetrics } from '@envengine/service-metrics';
import { BundleRepository, DeploymentRepository, MaterializationRepository } from '@envengine/deployment-data';
import { loadDeploymentConfig } from './config.ts';
import { DeploymentsService } from './deployments/deployments.service.ts';
import { WorkflowStarter } from './deployments/workflow-starter.ts';
import { internalRouter } from './internal.routes.ts';
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

// The deployment scope's API: bundles, deployments and assets. Ingest and activation run
// as Temporal workflows in the workflow-worker, which shares this scope's collections.
await runInternalService({
  service: 'deployment-service',
  config,
  routes: async ({ mongo, metrics }) => {
    const bundles = new BundleRepository(mongo);
    const deployments = new DeploymentRepository(mongo);
    const materializations = new MaterializationRepository(mongo);
    await Promise.all([bundles.ensureIndexes(), deployments.ensureIndexes(), materializations.ensureIndexes()]);

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
      privateApi: { credential: config.INTERNAL_CREDENTIAL, routes: internalRouter({ bundles, deployments, materializations }) },
    };
  },
  onStop: async () => {
    await workflows.close();
    await placement.close();
  },
});
