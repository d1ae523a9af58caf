import { proxyLocalActivities } from '@temporalio/workflow';
import type { Recheck } from '@envengine/contracts';
import { ActivateInput } from '@envengine/contracts/workflow-inputs';
import { workflowInput } from './workflow-input.ts';
import type { DeploymentActivities } from './definitions.ts';
import { awaitActivation } from './environment-activations.workflow.ts';

// Retried for up to the minute (20 attempts at most 5 s apart outlast it), as the ingest's.
const { requestActivation } = proxyLocalActivities<DeploymentActivities>({
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '1 minute',
  retry: { initialInterval: '100 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 20 },
});

/**
 * `activate-<deployment id>`: a rollback or a deferred activation. The environment's
 * activation workflow runs it after any activation already queued, and this one answers
 * with its re-check report.
 */
export async function activateDeployment(raw: ActivateInput): Promise<Recheck> {
  const input = workflowInput(ActivateInput, raw, 'activateDeployment');
  const { recheck } = await awaitActivation(requestActivation, input, input.deploymentId);
  return recheck;
}
