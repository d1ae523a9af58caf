// Names, inputs, signals and activity signatures shared by the deployment-service (which
// starts the workflows), the workflow-worker (which runs them) and the workflow code itself.
import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import type {
  ActivateInput,
  ActivationRequest,
  ActivationRetry,
  EnvironmentScope,
  StopEnvironmentWorkflowsInput,
  IngestInput,
  Recheck,
} from '@envengine/contracts';

// The inputs are zod schemas in libs/contracts (one definition, checked where a workflow is
// started and where it begins); their types are named here too for the workflows' callers.
export type {
  ActivateInput,
  ActivationRequest,
  ActivationRetry,
  EnvironmentActivationsInput,
  EnvironmentExpiryInput,
  EnvironmentScope,
  EnvironmentTeardownInput,
  IngestInput,
  ScheduleTicksInput,
} from '@envengine/contracts';

export {
  DEFAULT_TASK_QUEUE,
  ENVIRONMENT_EXPIRY_WORKFLOW,
  ENVIRONMENT_TEARDOWN_WORKFLOW,
  environmentExpiryWorkflowId,
  environmentTeardownWorkflowId,
  SCHEDULE_TICKS_WORKFLOW,
  scheduleTicksWorkflowId,
} from '@envengine/contracts/workflow-inputs';
export const INGEST_WORKFLOW = 'ingestDeployment';
export const ACTIVATE_WORKFLOW = 'activateDeployment';
export const ENVIRONMENT_ACTIVATIONS_WORKFLOW = 'environmentActivations';

/** Meaningful ids, so the Temporal UI says what each workflow is for. */
export const ingestWorkflowId = (deploymentId: string) => `ingest-${deploymentId}`;
export const activateWorkflowId = (deploymentId: string) => `activate-${deploymentId}`;
/** One per environment: it runs that environment's activations one at a time, in arrival order. */
export const environmentActivationsWorkflowId = (environmentId: string) => `activations-${environmentId}`;


/**
 * Search attributes every workflow carries, so the Temporal UI filters by them
 * (`EnvengineEnvironment = "prod"`). The embedded server registers them at start
 * (`--search-attribute`); another server needs `temporal operator search-attribute create`.
 */
export const SEARCH_ATTRIBUTES = {
  tenantId: defineSearchAttributeKey('EnvengineTenantId', SearchAttributeType.KEYWORD),
  environment: defineSearchAttributeKey('EnvengineEnvironment', SearchAttributeType.KEYWORD),
  environmentId: defineSearchAttributeKey('EnvengineEnvironmentId', SearchAttributeType.KEYWORD),
  deploymentId: defineSearchAttributeKey('EnvengineDeploymentId', SearchAttributeType.KEYWORD),
  /** An ingest's validation outcome (`ready` or `failed`): the workflow completes either way, so the UI filters by this. */
  ingestOutcome: defineSearchAttributeKey('EnvengineIngestOutcome', SearchAttributeType.KEYWORD),
} as const;

export function searchAttributesOf(scope: EnvironmentScope & { deploymentId?: string }): SearchAttributePair[] {
  return [
    { key: SEARCH_ATTRIBUTES.tenantId, value: scope.tenantId },
    { key: SEARCH_ATTRIBUTES.environment, value: scope.environmentName },
    { key: SEARCH_ATTRIBUTES.environmentId, value: scope.environmentId },
    ...(scope.deploymentId ? [{ key: SEARCH_ATTRIBUTES.deploymentId, value: scope.deploymentId }] : []),
  ];
}

/** Shown in the Temporal UI beside every workflow. */
export interface DeploymentMemo {
  tenant_id: string;
  environment: string;
  environment_id: string;
  deployment_id: string;
}

export interface IngestOutcome {
  deploymentId: string;
  status: 'ready' | 'failed';
  /** The re-check of the activation this ingest asked for; null when it did not activate. */
  recheck: Recheck | null;
}

/** About a minute of retries: a placement-service restart is ridden out, not reported. */
export const DEFAULT_ACTIVATION_RETRY: ActivationRetry = { maximumAttempts: 15, maximumInterval: '5 seconds' };

export type ActivationOutcome =
  | { deploymentId: string; ok: true; recheck: Recheck }
  | { deploymentId: string; ok: false; error: string };

export interface ValidationOutcome {
  status: 'ready' | 'failed';
  errors: number;
  warnings: number;
}

/** The activities the workflows call; the workflow-worker implements them. */
export interface DeploymentActivities {
  /**
   * Reads the stored manifest and what validation needs (bindings, bundle entries, the
   * active manifest), validates, and writes the deployment row once: a retry finds it
   * written and answers what it says.
   */
  validateAndRecord(input: IngestInput): Promise<ValidationOutcome>;
  /** Hands the request to the environment's activation workflow, starting it when it is not running. */
  requestActivation(input: EnvironmentScope & ActivationRequest): Promise<void>;
  /**
   * The activation itself: compares stored columns with the target's schemas (quarantining
   * mismatching latests), then moves the environment's pointer. Only ever run by the
   * environment's activation workflow, so never two at once for one environment.
   */
  activate(input: ActivateInput): Promise<Recheck>;
  /**
   * After an activation failed: makes the environment's stored schedules match the
   * deployment it still points at, undoing what the failed activation changed.
   */
  restoreSchedules(input: EnvironmentScope & { failedDeploymentId: string }): Promise<void>;
}

/** The tick loops' one activity. */
/** The tick loops' activity, in the contracts: the placement-service serves it (see `scopeTaskQueue`). */
export type { PlacementLifecycleActivities, ScheduleTickActivities, SecretsLifecycleActivities } from '@envengine/contracts/workflow-inputs';
import type { PlacementLifecycleActivities, SecretsLifecycleActivities } from '@envengine/contracts/workflow-inputs';

/** How long before a TTL lapses its expiry timer records `environment.expiring` (at once when less is left). */
export const EXPIRY_NOTICE_MS = 3_600_000;

/**
 * The activities of an environment's tear-down and expiry: the placement and secrets scopes'
 * steps (each on its scope's own queue) and the deployment scope's (on the workflows' queue). Each is idempotent, so a retry or a resumed tear-down repeats it safely.
 */
export interface EnvironmentLifecycleActivities extends PlacementLifecycleActivities, SecretsLifecycleActivities {
  /** Ends the environment's activation and expiry workflows, so nothing activates or expires it while it goes. */
  stopEnvironmentWorkflows(input: StopEnvironmentWorkflowsInput): Promise<void>;
  /** Removes its deployments, manifests and materialization records. */
  removeDeploymentRecords(input: EnvironmentScope): Promise<Record<string, number>>;
}

/** The type of an activity's failure when a service it called stayed unreachable: the caller of the workflow answers 503, not 500. */
export const UNAVAILABLE_FAILURE_TYPE = 'Unavailable';
