import { ApplicationFailure, condition, continueAsNew, getExternalWorkflowHandle, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import { activationFinished, activationRequested, unansweredActivations } from './activation-signals.ts';
import { ActivationRequest, EnvironmentActivationsInput, type EnvironmentScope, type WorkflowCause } from '@envengine/contracts/workflow-inputs';
import { workflowInput } from './workflow-input.ts';
import { DEFAULT_ACTIVATION_RETRY, type ActivationOutcome, type DeploymentActivities } from './definitions.ts';

/** Activations handled by one run before it continues as new, keeping its history short. */
const ACTIVATIONS_PER_RUN = 200;
/** Request keys remembered after they were served, so a repeated delivery is not served twice. */
const REMEMBERED_REQUESTS = 500;

const requestKey = (request: ActivationRequest) => `${request.replyTo.workflowId}/${request.replyTo.runId}/${request.deploymentId}`;

/**
 * `activations-<environment id>`: the one place an environment's activations run, one at
 * a time in the order their requests arrived (the mutex pattern of Temporal's samples, as
 * an entity workflow). A request arrives as a signal; the next one starts the moment the
 * previous one finishes, with no polling; each outcome goes back to the workflow run that
 * asked. The last activation to finish is the one the environment points at. A request
 * delivered twice (its sender's local activity retried) is served once.
 */
export async function environmentActivations(raw: EnvironmentActivationsInput): Promise<void> {
  const input = workflowInput(EnvironmentActivationsInput, raw, 'environmentActivations');
  const retry = input.retry ?? DEFAULT_ACTIVATION_RETRY;
  const { activate, restoreSchedules } = proxyActivities<DeploymentActivities>({
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: '3 minutes',
    retry: {
      initialInterval: '100 milliseconds',
      backoffCoefficient: 2,
      maximumInterval: retry.maximumInterval,
      maximumAttempts: retry.maximumAttempts,
      nonRetryableErrorTypes: ['NotFound', 'NotReady'],
    },
  });
  const queue: ActivationRequest[] = [...input.pending];
  const seen = new Set<string>([...input.served, ...input.pending.map(requestKey)]);
  const served: string[] = [...input.served];
  setHandler(activationRequested, (raw) => {
    // A signal that is not a request is dropped: no caller waits on something unnamed.
    const parsed = ActivationRequest.safeParse(raw);
    if (!parsed.success) return;
    const request = parsed.data;
    if (seen.has(requestKey(request))) return;
    seen.add(requestKey(request));
    queue.push(request);
  });
  let current: ActivationRequest | null = null;
  setHandler(unansweredActivations, () => [...(current ? [current] : []), ...queue]);
  for (let handled = 0; handled < ACTIVATIONS_PER_RUN && !workflowInfo().continueAsNewSuggested; handled += 1) {
    await condition(() => queue.length > 0);
    const request = queue.shift()!;
    current = request;
    let outcome: ActivationOutcome;
    try {
      const recheck = await activate({
        tenantId: input.tenantId,
        environmentId: input.environmentId,
        environmentName: input.environmentName,
        deploymentId: request.deploymentId,
        ...(request.cause ? { cause: request.cause } : {}),
      });
      outcome = { deploymentId: request.deploymentId, ok: true, recheck };
    } catch (error) {
      const cause = (error as { cause?: Error }).cause ?? (error as Error);
      outcome = { deploymentId: request.deploymentId, ok: false, error: cause.message };
      // The pointer did not move: the schedules go back to the deployment it points at.
      await restoreSchedules({
        tenantId: input.tenantId,
        environmentId: input.environmentId,
        environmentName: input.environmentName,
        failedDeploymentId: request.deploymentId,
      }).catch(() => undefined);
    }
    served.push(requestKey(request));
    if (served.length > REMEMBERED_REQUESTS) served.splice(0, served.length - REMEMBERED_REQUESTS);
    // A requester that is gone (terminated) cannot be answered; the next activation goes on.
    await getExternalWorkflowHandle(request.replyTo.workflowId, request.replyTo.runId)
      .signal(activationFinished, outcome)
      .catch(() => undefined);
    current = null;
  }
  await continueAsNew<typeof environmentActivations>({ ...input, pending: queue, served });
}

/**
 * Asks the environment's activation workflow (through the `requestActivation` activity) to
 * activate `deploymentId` and waits for the outcome: the recheck report, or a failure
 * naming why the activation did not happen. The activation's events name `scope.cause`.
 */
export async function awaitActivation(
  requestActivation: DeploymentActivities['requestActivation'],
  scope: EnvironmentScope & { cause?: WorkflowCause },
  deploymentId: string,
): Promise<ActivationOutcome & { ok: true }> {
  let outcome: ActivationOutcome | undefined;
  setHandler(activationFinished, (finished) => {
    if (finished.deploymentId === deploymentId) outcome = finished;
  });
  const { workflowId, runId } = workflowInfo();
  await requestActivation({
    tenantId: scope.tenantId,
    environmentId: scope.environmentId,
    environmentName: scope.environmentName,
    deploymentId,
    replyTo: { workflowId, runId },
    ...(scope.cause ? { cause: scope.cause } : {}),
  });
  if (!(await condition(() => outcome !== undefined, '10 minutes'))) {
    throw ApplicationFailure.nonRetryable(`activation of ${deploymentId} did not finish within 10 minutes`, 'ActivationTimedOut');
  }
  if (!outcome!.ok) throw ApplicationFailure.nonRetryable(`activation of ${deploymentId} failed: ${outcome!.error}`, 'ActivationFailed');
  return outcome!;
}
