import { ScheduledRunInput, schedulesOfManifest, type ScheduleDefinition } from '@envengine/contracts';
import type { DeploymentRepository } from '@envengine/deployment-data';
import {
  SCHEDULED_RUN_WORKFLOW,
  searchAttributesOf,
  type DeploymentActivities,
  type EnvironmentScope,
} from '@envengine/deployment-workflows';
import type { EnvironmentSchedules, ReconcileOutcome } from '@envengine/environment-schedules';
import { isDroppedTick, parseCronExpression, tickKeyOf } from '@envengine/schedule-timing';
import type { PlacementClient } from '@envengine/service-clients';
import { ApiError } from '@envengine/service-kit';
import { ApplicationFailure } from '@temporalio/activity';

export interface ScheduleActivityDeps {
  deployments: DeploymentRepository;
  placement: PlacementClient;
  schedules: EnvironmentSchedules;
  taskQueue: string;
}

/** The deployment's schedules as its stored manifest declares them. */
async function schedulesOf(deployments: DeploymentRepository, tenantId: string, deploymentId: string | null): Promise<ScheduleDefinition[]> {
  if (deploymentId === null) return [];
  return schedulesOfManifest(await deployments.manifest(tenantId, deploymentId));
}

/**
 * The schedule side of activation and the activities of a schedule's tick. Reconciling
 * is idempotent (Temporal's schedule ids are the environment's and the schedule's names),
 * and a tick's run is made once per tick by the placement-service, so retries are safe.
 */
export function scheduleActivities(deps: ScheduleActivityDeps) {
  const { deployments, placement, schedules } = deps;

  /** Makes the environment's schedules those of `deploymentId`; `alsoDelete` names schedules another deployment may have made. */
  async function reconcileTo(scope: EnvironmentScope, deploymentId: string | null, alsoDelete: string[]): Promise<ReconcileOutcome> {
    const environment = await placement.findEnvironment(scope.tenantId, scope.environmentName);
    if (!environment || environment.id !== scope.environmentId) throw new Error(`environment ${scope.environmentName} does not exist`);
    // Its tear-down deletes its schedules: none is made again behind it.
    if (environment.status === 'deleting') throw ApplicationFailure.nonRetryable(`environment ${scope.environmentName} is being deleted`, 'NotFound');
    const [target, active] = await Promise.all([
      schedulesOf(deployments, scope.tenantId, deploymentId),
      schedulesOf(deployments, scope.tenantId, environment.active_deployment_id),
    ]);
    return schedules.reconcile(scope, target, {
      paused: environment.schedules_paused,
      mayExist: [...active.map((schedule) => schedule.name), ...alsoDelete],
      now: Date.now(),
      action: {
        workflowType: SCHEDULED_RUN_WORKFLOW,
        taskQueue: deps.taskQueue,
        searchAttributes: searchAttributesOf(scope),
        args: (definition): [ScheduledRunInput] => [
          ScheduledRunInput.parse({ ...scope, schedule: definition.name, job: definition.job, cron: definition.cron, timezone: definition.timezone }),
        ],
      },
    });
  }

  const activities: Pick<DeploymentActivities, 'restoreSchedules' | 'startScheduledRun'> = {
    async restoreSchedules({ failedDeploymentId, ...scope }) {
      const environment = await placement.findEnvironment(scope.tenantId, scope.environmentName);
      if (!environment) return;
      await reconcileTo(scope, environment.active_deployment_id, (await schedulesOf(deployments, scope.tenantId, failedDeploymentId)).map((s) => s.name));
    },

    async startScheduledRun(tick) {
      const instant = Date.parse(tick.scheduledAt);
      const cron = parseCronExpression(tick.cron);
      // Validation refused a bad cron before the schedule existed; a tick of one starts nothing.
      if (typeof cron === 'string' || isDroppedTick(cron, tick.timezone, instant)) return { outcome: 'not_a_fire_time', run_id: null };
      try {
        return await placement.startScheduledRun(tick.tenantId, tick.environmentName, {
          schedule: tick.schedule,
          job: tick.job,
          tick: tickKeyOf(instant, tick.timezone),
          environment_id: tick.environmentId,
        });
      } catch (error) {
        if (!(error instanceof ApiError && error.code === 'not_found')) throw error;
        // The schedule outlived its environment (a tear-down that raced an activation): it goes now.
        await schedules.deleteAll(tick.environmentId, [tick.schedule]);
        return { outcome: 'paused', run_id: null };
      }
    },

  };
  return { ...activities, reconcileTo };
}
