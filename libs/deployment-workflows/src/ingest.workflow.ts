import { patched, proxyLocalActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { IngestInput } from '@envengine/contracts/workflow-inputs';
import { workflowInput } from './workflow-input.ts';
import { SEARCH_ATTRIBUTES, type DeploymentActivities, type IngestOutcome } from './definitions.ts';
import { awaitActivation } from './environment-activations.workflow.ts';

// Short steps that touch only this scope's database (and one typed call to the secrets
// service): local activities, run in the worker's own process without a round trip
// through the server per step, each with a retry cap and a deadline.
// Retried for up to the minute (a service restarting or paused rides it out; 20 attempts
// at most 5 s apart outlast it), then the caller answers 503 (UNAVAILABLE_FAILURE_TYPE).
const { validateAndRecord, requestActivation } = proxyLocalActivities<DeploymentActivities>({
  startToCloseTimeout: '20 seconds',
  scheduleToCloseTimeout: '1 minute',
  retry: { initialInterval: '100 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 20, nonRetryableErrorTypes: ['NotFound'] },
});

/** The change that sets `EnvengineIngestOutcome` (Temporal's patching: histories from before it replay unchanged). */
const INGEST_OUTCOME_PATCH = 'ingest-outcome-search-attribute';

/**
 * `ingest-<deployment id>`: validates the stored manifest and writes the row once (one
 * local activity), then, for a ready deployment asked to activate, has the environment's
 * activation workflow run the activation and waits for its re-check report.
 */
export async function ingestDeployment(raw: IngestInput): Promise<IngestOutcome> {
  const input = workflowInput(IngestInput, raw, 'ingestDeployment');
  const { status } = await validateAndRecord(input);
  // Patched: an ingest started before this change replays without the command.
  if (patched(INGEST_OUTCOME_PATCH)) upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.ingestOutcome, value: status }]);
  if (status !== 'ready' || !input.activate) return { deploymentId: input.deploymentId, status, recheck: null };
  // The activation's events name the request that asked for the ingest (`input.cause`).
  const { recheck } = await awaitActivation(requestActivation, input, input.deploymentId);
  return { deploymentId: input.deploymentId, status, recheck };
}
