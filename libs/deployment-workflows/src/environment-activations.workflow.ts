import { ApplicationFailure, condition, continueAsNew, getExternalWorkflowHandle, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import { activationFinished, activationRequested } from './activation-signals.ts';
import type { ActivationOutcome, ActivationRequest, DeploymentActivities, EnvironmentActivationsInput } from './definitions.ts';

const { activate } = proxyActivities<DeploymentActivities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '2 minutes',
  retry: { initialInterval: '100 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 8, nonRetryableErrorTypes: ['NotFound', 'NotReady'] },
});

/** Activations handled by one run before it continues as new, keeping its history short. */
const ACTIVATIONS_PER_RUN = 200;

/**
 * `activations-<environment id>`: the one place an environment's activations run, one at
 * a time in the order they were asked for (the mutex pattern of Temporal's samples, as an
 * entity workflow). A request arrives as a signal; the next one starts the moment the
 * previous one finishes, with no polling; each outcome goes back to the workflow that asked.
 * The last activation to finish is the one the environment points at.
 */
export async function environmentActivations(input: EnvironmentActivationsInput): Promise<void> {
  const queue: ActivationRequest[] = [...input.pending];
  setHandler(activationRequested, (request) => {
    queue.push(request);
  });
  for (let handled = 0; handled < ACTIVATIONS_PER_RUN && !workflowInfo().continueAsNewSuggested; handled += 1) {
    await condition(() => queue.length > 0);
    const request = queue.shift()!;
    let outcome: ActivationOutcome;
    try {
      const recheck = await activate({
        tenantId: input.tenantId,
        environmentId: input.environmentId,
        environmentName: input.environmentName,
        deploymentId: request.deploymentId,
      });
      outcome = { deploymentId: request.deploymentId, ok: true, recheck };
    } catch (error) {
      const cause = (error as { cause?: Error }).cause ?? (error as Error);
      outcome = { deploymentId: request.deploymentId, ok: false, error: cause.message };
    }
    // A requester that is gone (terminated) cannot be answered; the next activation goes on.
    await getExternalWorkflowHandle(request.replyTo)
      .signal(activationFinished, outcome)
      .catch(() => undefined);
  }
  await continueAsNew<typeof environmentActivations>({ ...input, pending: queue });
}

/**
 * Asks the environment's activation workflow to activate `deploymentId` and waits for the
 * outcome: the recheck report, or a failure naming why the activation did not happen.
 */
export async function awaitActivation(
  request: (input: { deploymentId: string; replyTo: string }) => Promise<void>,
  deploymentId: string,
): Promise<ActivationOutcome & { ok: true }> {
  let outcome: ActivationOutcome | undefined;
  setHandler(activationFinished, (finished) => {
    if (finished.deploymentId === deploymentId) outcome = finished;
  });
  await request({ deploymentId, replyTo: workflowInfo().workflowId });
  if (!(await condition(() => outcome !== undefined, '10 minutes'))) {
    throw ApplicationFailure.nonRetryable(`activation of ${deploymentId} did not finish within 10 minutes`, 'ActivationTimedOut');
  }
  if (!outcome!.ok) throw ApplicationFailure.nonRetryable(`activation of ${deploymentId} failed: ${outcome!.error}`, 'ActivationFailed');
  return outcome!;
}
