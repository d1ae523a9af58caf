import { ApplicationFailure } from '@temporalio/activity';
import type { DeploymentActivities } from '@envengine/deployment-workflows';
import type { DeploymentClient, PlacementClient, SecretsClient } from '@envengine/service-clients';
import { ApiError } from '@envengine/service-kit';

/**
 * Every I/O step of the ingest and activation workflows, each through the owning
 * service's internal API. Each is safe to retry: reads read, the record is written once
 * under its id, the lock is taken again by its holder, the pointer is set to a value.
 */
export function deploymentActivities(clients: {
  placement: PlacementClient;
  secrets: SecretsClient;
  deployments: DeploymentClient;
}): DeploymentActivities {
  const { placement, secrets, deployments } = clients;

  // A missing resource will not appear by retrying; anything else (a service restarting) may pass.
  const finalIfNotFound = (error: unknown): never => {
    if (error instanceof ApiError && error.code === 'not_found') {
      throw ApplicationFailure.nonRetryable(error.message, 'NotFound');
    }
    throw error;
  };

  return {
    async loadIngestContext({ tenantId, environmentName, bundleRef }) {
      const environment = await placement.findEnvironment(tenantId, environmentName).catch(finalIfNotFound);
      if (!environment) throw ApplicationFailure.nonRetryable(`environment ${environmentName} is gone`, 'NotFound');
      const [bindings, bundleEntries, activeManifest] = await Promise.all([
        secrets.listBindings(tenantId, environmentName),
        deployments.bundleEntries(tenantId, bundleRef),
        environment.active_deployment_id ? deployments.manifest(tenantId, environment.active_deployment_id) : Promise.resolve(null),
      ]);
      return {
        strict: environment.strict,
        bindings: bindings.map((binding) => ({ name: binding.name, mode: binding.mode })),
        bundleEntries,
        activeManifest,
      };
    },

    async recordDeployment(record) {
      await deployments.recordDeployment(record.tenantId, record);
    },

    async acquireActivationLock({ tenantId, environmentId, holder }) {
      await deployments.acquireActivationLock(tenantId, environmentId, holder);
    },

    async releaseActivationLock({ tenantId, environmentId, holder }) {
      await deployments.releaseActivationLock(tenantId, environmentId, holder);
    },

    async recheckAssets({ tenantId, deploymentId }) {
      return deployments.recheck(tenantId, deploymentId).catch(finalIfNotFound);
    },

    async movePointer({ tenantId, environmentName, deploymentId }) {
      const deployment = await deployments.deployment(tenantId, deploymentId).catch(finalIfNotFound);
      if (deployment.status !== 'ready') {
        throw ApplicationFailure.nonRetryable(`deployment ${deploymentId} is ${deployment.status}`, 'NotReady');
      }
      await placement.setActiveDeployment(tenantId, environmentName, { deployment_id: deploymentId, git_ref: deployment.git.sha }).catch(finalIfNotFound);
    },
  };
}
