import { schedulesOfManifest, type EnvironmentScope as Scope, type ReconcileSchedulesResult, type ScheduleDefinition } from '@envengine/contracts';
import type { DeploymentRepository } from '@envengine/deployment-data';
import type { DeploymentActivities, ScheduleTickActivities } from '@envengine/deployment-workflows';
import type { LegacyTemporalSchedules } from '@envengine/environment-schedules';
import type { PlacementClient } from '@envengine/service-clients';
import { ApiError, type Logger } from '@envengine/service-kit';
import { ApplicationFailure } from '@temporalio/activity';

export interface ScheduleActivityDeps {
  deployments: DeploymentRepository;
  placement: PlacementClient;
  /**
   * The placement-service for tick passes: a client whose calls wait up to the pass's own
   * bound (`TICK_PASS_TIMEOUT_MS`), not the 10 s of other calls, so that a long pass is not
   * given up on, and made again beside itself, while it still works.
   */
  tickPasses: PlacementClient;
}

/** A tick pass's call waits this long: under its activity's one-minute timeout, over the pass's budget and a batch. */
export const TICK_PASS_TIMEOUT_MS = 55_000;

/** The deployment's schedules as its stored manifest declares them. */
async function schedulesOf(deployments: DeploymentRepository, tenantId: string, deploymentId: string | null): Promise<ScheduleDefinition[]> {
  if (deploymentId === null) return [];
  return schedulesOfManifest(await deployments.manifest(tenantId, deploymentId));
}

/**
 * The schedule side of activation, and the tick loops' pass. The stored schedules are the
 * placement-service's (it makes the ticks' runs): an activation hands it the deployment's
 * schedules, read here from the deployment scope's own records, in one call.
 */
export function scheduleActivities(deps: ScheduleActivityDeps) {
  const { deployments, placement } = deps;

  /** Makes the environment's stored schedules those of `deploymentId` (none for null). */
  async function reconcileTo(scope: Scope, deploymentId: string | null): Promise<ReconcileSchedulesResult> {
    return reconcileToSchedules(scope, await schedulesOf(deployments, scope.tenantId, deploymentId));
  }

  /** The same, for schedules the caller has read already (an activation holds its manifest). */
  async function reconcileToSchedules(scope: Scope, target: ScheduleDefinition[]): Promise<ReconcileSchedulesResult> {
    try {
      return await placement.reconcileSchedules(scope.tenantId, scope.environmentId, { schedules: target });
    } catch (error) {
      // Gone, or its tear-down has begun: no schedule is made again behind it.
      if (error instanceof ApiError && (error.code === 'not_found' || error.code === 'environment_deleting')) {
        throw ApplicationFailure.nonRetryable(`environment ${scope.environmentName}: ${error.message}`, 'NotFound');
      }
      throw error;
    }
  }

  const activities: Pick<DeploymentActivities, 'restoreSchedules'> & ScheduleTickActivities = {
    async restoreSchedules(scope) {
      const environment = await placement.findEnvironment(scope.tenantId, scope.environmentName);
      if (!environment || environment.id !== scope.environmentId) return;
      await reconcileTo(scope, environment.active_deployment_id);
    },

    // A tick loop's history begun before SCOPE_TASK_QUEUES_PATCH (libs/contracts/src/workflow-inputs.ts)
    // schedules its pass here, on the workflows' queue, until its next continue-as-new: the
    // placement-service serves the passes of every later run on its own queue, over its own data.
    tickSchedules({ shard }) {
      return deps.tickPasses.tickSchedules(shard);
    },
  };
  return { ...activities, reconcileTo, reconcileToSchedules };
}

/**
 * At start-up: Temporal Schedules of the first design (`sched-*`, from a data directory
 * made before the tick loops) are replaced by stored schedules, then deleted. Each one's
 * environment gets its active deployment's schedules stored (its pause flag, which both
 * designs keep on the environment, is untouched); a schedule whose environment is gone is
 * only deleted. Idempotent: a start cut short does the rest at the next one.
 */
export async function retireTemporalSchedules(legacy: LegacyTemporalSchedules, placement: PlacementClient, reconcileTo: (scope: Scope, deploymentId: string | null) => Promise<ReconcileSchedulesResult>, log: Logger): Promise<void> {
  const { found, unreadable } = await legacy.list();
  if (found.length === 0 && unreadable.length === 0) return;
  const environments = new Map<string, Scope>();
  for (const { input } of found) environments.set(input.environmentId, { tenantId: input.tenantId, environmentId: input.environmentId, environmentName: input.environmentName });
  let stored = 0;
  for (const scope of environments.values()) {
    const environment = await placement.findEnvironment(scope.tenantId, scope.environmentName);
    if (!environment || environment.id !== scope.environmentId || environment.status === 'deleting') continue;
    const result = await reconcileTo(scope, environment.active_deployment_id);
    stored += result.created.length + result.updated.length;
  }
  let deleted = 0;
  for (const scheduleId of [...found.map((schedule) => schedule.scheduleId), ...unreadable]) if (await legacy.delete(scheduleId)) deleted += 1;
  log.info(
    { environments: environments.size, stored, deleted, paused: found.filter((schedule) => schedule.paused).length },
    'Temporal Schedules of the first design replaced by stored schedules and deleted',
  );
}
