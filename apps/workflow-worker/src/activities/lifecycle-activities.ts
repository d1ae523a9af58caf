import { ApplicationFailure } from '@temporalio/activity';
import { QueryNotRegisteredError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { DeploymentRepository, MaterializationRepository } from '@envengine/deployment-data';
import {
  activationFinished,
  environmentActivationsWorkflowId,
  environmentExpiryWorkflowId,
  unansweredActivations,
  type ActivationOutcome,
  type EnvironmentLifecycleActivities,
} from '@envengine/deployment-workflows';
import type { LegacyTemporalSchedules } from '@envengine/environment-schedules';
import type { PlacementClient, SecretsClient } from '@envengine/service-clients';
import { ApiError } from '@envengine/service-kit';

export interface LifecycleActivityDeps {
  /** The deployment scope's own collections, read and removed directly. */
  deployments: DeploymentRepository;
  materializations: MaterializationRepository;
  /** Other scopes, through their typed internal clients. */
  placement: PlacementClient;
  secrets: SecretsClient;
  temporal: Client;
  legacySchedules: LegacyTemporalSchedules;
}

/**
 * The steps of an environment's tear-down and its expiry timer. Each is idempotent: what
 * was removed is not found again, and a workflow already ended is not an error.
 *
 * The placement scope's steps (schedules, runs, files, the environment, the expiry) and the
 * secrets scope's run on each scope's own queue, in the service that owns the data. They are
 * served here too, over its internal API, only for a tear-down or timer whose history began
 * before SCOPE_TASK_QUEUES_PATCH (libs/contracts/src/workflow-inputs.ts): such a history keeps
 * scheduling them on this queue.
 */
export function lifecycleActivities(deps: LifecycleActivityDeps): EnvironmentLifecycleActivities {
  const { deployments, materializations, placement, secrets, temporal, legacySchedules } = deps;

  async function terminate(workflowId: string, reason: string): Promise<void> {
    try {
      await temporal.workflow.getHandle(workflowId).terminate(reason);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  }

  /**
   * Tells each ingest that waited on the terminated activation workflow (queued, or being
   * activated) that the environment was deleted, so that it fails now instead of waiting
   * out its limit. Asked once the workflow is closed: no request can arrive after that.
   */
  async function answerUnanswered(environmentId: string, environmentName: string): Promise<void> {
    let unanswered;
    try {
      unanswered = await temporal.workflow.getHandle(environmentActivationsWorkflowId(environmentId)).query(unansweredActivations);
    } catch (error) {
      // Never started, or a run of a version without the query (its requesters wait out their limit, as before).
      if (error instanceof WorkflowNotFoundError || error instanceof QueryNotRegisteredError) return;
      throw error;
    }
    for (const request of unanswered) {
      const outcome: ActivationOutcome = { deploymentId: request.deploymentId, ok: false, error: `environment "${environmentName}" was deleted` };
      try {
        await temporal.workflow.getHandle(request.replyTo.workflowId, request.replyTo.runId).signal(activationFinished, outcome);
      } catch (error) {
        // Its requester ended already (it was answered, or gave up).
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      }
    }
  }

  return {
    async stopEnvironmentWorkflows({ environmentId, environmentName, expired }) {
      // An activation in flight fails at its last step (the environment refuses a new pointer while it is deleting).
      await terminate(environmentActivationsWorkflowId(environmentId), 'environment deleted');
      await answerUnanswered(environmentId, environmentName);
      // The expiry timer that began this tear-down returns once its call is answered (an
      // answer lost is asked again, and answers expired again): terminated here, it would
      // show a lapsed TTL as a deletion in Temporal's UI.
      if (!expired) await terminate(environmentExpiryWorkflowId(environmentId), 'environment deleted');
    },

    async deleteEnvironmentSchedules({ tenantId, environmentId }) {
      const { deleted } = await placement.removeSchedules(tenantId, environmentId);
      // A Temporal Schedule of the first design that start-up has not retired yet goes too.
      return { deleted: deleted + (await legacySchedules.deleteAllOf(environmentId)) };
    },

    async removeEnvironmentRuns({ tenantId, environmentId }) {
      return placement.removeEnvironmentRuns(tenantId, environmentId);
    },

    async purgeMaterializationFiles({ tenantId, environmentId, after }) {
      // The placement-service lists the prefix itself: files the engine wrote without a record (an earlier environment of the same prefix) go too.
      return placement.purgeFiles(tenantId, environmentId, { after });
    },

    async retireEnvironmentSecrets({ tenantId, environmentId }) {
      return secrets.retireEnvironment(tenantId, environmentId);
    },

    async removeDeploymentRecords({ tenantId, environmentId }) {
      const removed = await deployments.removeAllOf(tenantId, environmentId);
      return { ...removed, materializations: await materializations.removeAllOf(tenantId, environmentId) };
    },

    async removeEnvironment({ tenantId, environmentId }) {
      await placement.removeEnvironment(tenantId, environmentId);
    },

    async noticeEnvironmentExpiry({ tenantId, environmentId, expiresAt }) {
      return placement.noticeExpiry(tenantId, environmentId, expiresAt);
    },

    async expireEnvironment({ tenantId, environmentId }) {
      try {
        return await placement.expire(tenantId, environmentId);
      } catch (error) {
        // A request the placement-service refuses will be refused again: the timer ends.
        if (error instanceof ApiError && error.code === 'invalid_request') throw ApplicationFailure.nonRetryable(error.message, 'BadRequest');
        throw error;
      }
    },
  };
}
