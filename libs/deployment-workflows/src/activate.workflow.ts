import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Recheck } from '@envengine/contracts';
import type { ActivateInput, DeploymentActivities } from './definitions.ts';

const activities = proxyActivities<DeploymentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds' },
});

// Waiting for the lock is retrying its activity: quickly at first, then at most every second.
const { acquireActivationLock } = proxyActivities<DeploymentActivities>({
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '10 minutes',
  retry: { initialInterval: '50 milliseconds', backoffCoefficient: 1.5, maximumInterval: '1 second' },
});

/**
 * `activate-<deployment id>`: one activation of an environment at a time (its lock), and
 * within it the re-check of stored columns against the target's schemas, then the
 * pointer move. The last activation to finish is the one the environment points at.
 */
export async function activateDeployment(input: ActivateInput): Promise<Recheck> {
  const holder = `${workflowInfo().workflowId}/${workflowInfo().runId}`;
  await acquireActivationLock({ tenantId: input.tenantId, environmentId: input.environmentId, holder });
  try {
    const recheck = await activities.recheckAssets({ tenantId: input.tenantId, deploymentId: input.deploymentId });
    await activities.movePointer({
      tenantId: input.tenantId,
      environmentName: input.environmentName,
      deploymentId: input.deploymentId,
    });
    return recheck;
  } finally {
    await activities.releaseActivationLock({ tenantId: input.tenantId, environmentId: input.environmentId, holder });
  }
}
