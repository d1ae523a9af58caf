import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ActivationRequest, EnvironmentActivationsInput, ManifestV1, schedulesOfManifest, type ActivateInput, type Recheck, type ValidationItem, type WorkflowCause } from '@envengine/contracts';
import { ENGINE_CAUSE, type EventCause } from '@envengine/event-log';
import type { ActivationMetrics } from '@envengine/service-metrics';
import type { BundleRepository, DeploymentRepository, MaterializationRepository } from '@envengine/deployment-data';
import {
  activationRequested,
  ENVIRONMENT_ACTIVATIONS_WORKFLOW,
  environmentActivationsWorkflowId,
  searchAttributesOf,
  UNAVAILABLE_FAILURE_TYPE,
  type DeploymentActivities,
  type DeploymentMemo,
  type ScheduleTickActivities,
} from '@envengine/deployment-workflows';
import { validateManifest } from '@envengine/manifest-rules';
import type { PlacementClient, SecretsClient } from '@envengine/service-clients';
import { ApiError } from '@envengine/service-kit';
import { recheckStoredColumns } from '../activation/recheck.ts';
import { scheduleActivities } from './schedule-activities.ts';

/** Keeps a hostile manifest's findings within a document's and a response's reasonable size. */
const MAX_ISSUES = 500;

function capped(items: ValidationItem[]): ValidationItem[] {
  if (items.length <= MAX_ISSUES) return items;
  return [
    ...items.slice(0, MAX_ISSUES),
    { code: items[MAX_ISSUES]!.code, path: 'manifest', message: `${items.length - MAX_ISSUES} more findings are not listed.` },
  ];
}

export interface DeploymentActivityDeps {
  /** The deployment scope's own collections, read and written directly. */
  deployments: DeploymentRepository;
  bundles: BundleRepository;
  materializations: MaterializationRepository;
  /** Other scopes, through their typed internal clients. */
  placement: PlacementClient;
  /** The placement-service for the tick loops' passes (a longer wait: `TICK_PASS_TIMEOUT_MS`). */
  tickPasses: PlacementClient;
  secrets: SecretsClient;
  temporal: Client;
  taskQueue: string;
  /** Activations are timed here, where they run. */
  metrics: ActivationMetrics;
}

// A missing resource will not appear by retrying, nor will an environment being deleted
// take changes again; anything else (a service restarting) may pass, and an unreachable
// service is named as such, so that the workflow's caller answers 503 if it never returns.
function finalIfNotFound(error: unknown): never {
  if (error instanceof ApiError && error.code === 'not_found') throw ApplicationFailure.nonRetryable(error.message, 'NotFound');
  if (error instanceof ApiError && error.code === 'environment_deleting') throw ApplicationFailure.nonRetryable(error.message, 'NotFound');
  if (error instanceof ApiError && error.code === 'unavailable') throw ApplicationFailure.retryable(error.message, UNAVAILABLE_FAILURE_TYPE);
  throw error;
}

/** Who the events of a workflow's changes name: the request that started it, or the engine. */
export function eventCauseOf(cause: WorkflowCause | undefined): EventCause {
  return cause ? { actor: cause.actor, requestId: cause.request_id } : ENGINE_CAUSE;
}

/**
 * Every I/O step of the ingest and activation workflows. Each is safe to retry: the row
 * is written once under its id, a request to activate is idempotent in effect, the
 * re-check leaves quarantined materializations as they are, the pointer is set to a value.
 */
export function deploymentActivities(deps: DeploymentActivityDeps): DeploymentActivities & ScheduleTickActivities {
  const { deployments, bundles, materializations, placement, secrets, temporal } = deps;
  const { restoreSchedules, tickSchedules, reconcileToSchedules } = scheduleActivities(deps);

  return {
    restoreSchedules,
    tickSchedules,

    async validateAndRecord(input) {
      // Both at once: the manifest is needed unless this is a retry that finds the row written.
      const [recorded, manifest] = await Promise.all([deployments.find(input.tenantId, input.deploymentId), deployments.manifest(input.tenantId, input.deploymentId)]);
      if (recorded) {
        return { status: recorded.status, errors: recorded.validation.errors.length, warnings: recorded.validation.warnings.length };
      }
      if (manifest === undefined) throw ApplicationFailure.nonRetryable(`no manifest stored for ${input.deploymentId}`, 'NotFound');
      const [bindings, bundleEntries, activeManifest] = await Promise.all([
        secrets.listBindings(input.tenantId, input.environmentName).catch(finalIfNotFound),
        bundles.entries(input.tenantId, input.bundleRef),
        input.activeDeploymentId ? deployments.manifest(input.tenantId, input.activeDeploymentId) : Promise.resolve(null),
      ]);
      const active = ManifestV1.safeParse(activeManifest);
      const validation = validateManifest(manifest, {
        bindings: new Map(bindings.map((binding) => [binding.name, { mode: binding.mode }])),
        bundleEntries: bundleEntries === null ? null : new Set(bundleEntries),
        activeManifest: active.success ? active.data : null,
        strict: input.strict,
        allowContractChanges: input.allowContractChanges,
        environmentName: input.environmentName,
      });
      const errors = capped([...input.fieldErrors, ...validation.errors]);
      const warnings = capped(validation.warnings);
      const status = errors.length === 0 ? 'ready' : 'failed';
      await deployments.recordOnce(
        input.tenantId,
        {
          id: input.deploymentId,
          environment_id: input.environmentId,
          environment_name: input.environmentName,
          status,
          git: input.git,
          bundle_ref: input.bundleRef,
          sdk_version: input.sdkVersion,
          validation: { errors, warnings },
          allow_contract_changes: input.allowContractChanges,
          created_by: input.createdBy,
          promoted_from: input.promotedFrom ?? null,
        },
        new Date(),
        eventCauseOf(input.cause),
      );
      return { status, errors: errors.length, warnings: warnings.length };
    },

    async requestActivation({ tenantId, environmentId, environmentName, deploymentId, replyTo, cause }) {
      // No activation workflow is started again behind a tear-down, which ended it.
      const environment = await placement.findEnvironment(tenantId, environmentName);
      if (environment?.id !== environmentId || environment.status === 'deleting') {
        throw ApplicationFailure.nonRetryable(`environment ${environmentName} is being deleted or is gone`, 'NotFound');
      }
      const scope = { tenantId, environmentId, environmentName };
      const args = EnvironmentActivationsInput.parse({ ...scope, pending: [], served: [] });
      const memo: Omit<DeploymentMemo, 'deployment_id'> = { tenant_id: tenantId, environment: environmentName, environment_id: environmentId };
      await temporal.workflow.signalWithStart(ENVIRONMENT_ACTIVATIONS_WORKFLOW, {
        workflowId: environmentActivationsWorkflowId(environmentId),
        taskQueue: deps.taskQueue,
        args: [args],
        signal: activationRequested,
        signalArgs: [ActivationRequest.parse({ deploymentId, replyTo, ...(cause ? { cause } : {}) })],
        memo: { ...memo },
        typedSearchAttributes: searchAttributesOf(scope),
      });
    },

    async activate(input) {
      const started = Date.now();
      try {
        const recheck = await activateOnce(input);
        deps.metrics.activationDuration.observe({ outcome: 'activated' }, (Date.now() - started) / 1000);
        return recheck;
      } catch (error) {
        deps.metrics.activationDuration.observe({ outcome: 'failed' }, (Date.now() - started) / 1000);
        throw error;
      }
    },
  };

  /**
   * The activation itself: re-check, schedules, then the pointer; last, the deployment
   * scope records it (the row becomes the environment's active one) with its event. A retry
   * after that record committed finds it there and records nothing twice.
   */
  async function activateOnce({ tenantId, environmentId, environmentName, deploymentId, cause }: ActivateInput): Promise<Recheck> {
    const [row, manifest] = await Promise.all([deployments.find(tenantId, deploymentId), deployments.manifest(tenantId, deploymentId)]);
    if (!row) throw ApplicationFailure.nonRetryable(`deployment ${deploymentId} does not exist`, 'NotFound');
    if (row.status !== 'ready') throw ApplicationFailure.nonRetryable(`deployment ${deploymentId} is ${row.status}`, 'NotReady');
    const eventCause = eventCauseOf(cause);
    const environment = { id: environmentId, name: environmentName };
    // Before the pointer moves, and independent of each other, so at once: the re-check, the
    // schedules, and where the pointer was (asked of the placement-service only when this
    // scope has recorded no activation of the environment yet: one activated before
    // activations were recorded here). A failure of any fails the activation with the
    // pointer where it was (the workflow then restores the schedules of the deployment it
    // points at).
    const [recheck, , before] = await Promise.all([
      recheckStoredColumns(materializations, { tenantId, environment, deploymentId, manifest, cause: eventCause }),
      reconcileToSchedules({ tenantId, environmentId, environmentName }, schedulesOfManifest(manifest)),
      deployments
        .recordedActive(tenantId, environmentId)
        .then((recorded) => (recorded === undefined ? placement.findEnvironment(tenantId, environmentName).catch(finalIfNotFound) : undefined)),
    ]);
    await placement.setActiveDeployment(tenantId, environmentName, { deployment_id: deploymentId, git_ref: row.git.sha }).catch(finalIfNotFound);
    await deployments.recordActivation(tenantId, {
      environment,
      deploymentId,
      recheck,
      pointerBefore: before?.id === environmentId ? before.active_deployment_id : null,
      cause: eventCause,
    });
    return recheck;
  }
}
