import { ApplicationFailure } from '@temporalio/activity';
import type { PlacementLifecycleActivities } from '@envengine/contracts';
import type { LegacyTemporalSchedules } from '@envengine/environment-schedules';
import { ApiError } from '@envengine/service-kit';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { SchedulesService } from '../schedules/schedules.service.ts';
import type { EnvironmentLifecycle } from './environment-lifecycle.ts';
import type { MaterializationPurge } from './materialization-purge.ts';

export interface LifecycleActivityDeps {
  environments: EnvironmentRepository;
  lifecycle: EnvironmentLifecycle;
  purge: MaterializationPurge;
  schedules: SchedulesService;
  legacySchedules: LegacyTemporalSchedules;
}

/**
 * The tear-down's and the expiry timer's steps on this scope's data, served on its own task
 * queue (main.ts) over its own repositories. Each is idempotent: what was removed is not
 * found again.
 */
export function placementLifecycleActivities(deps: LifecycleActivityDeps): PlacementLifecycleActivities {
  const { environments, lifecycle, purge, schedules, legacySchedules } = deps;
  return {
    async deleteEnvironmentSchedules({ tenantId, environmentId }) {
      const { deleted } = await schedules.removeAll(tenantId, environmentId);
      // A Temporal Schedule of the first design that the workflow-worker's start-up has not retired yet goes too.
      return { deleted: deleted + (await legacySchedules.deleteAllOf(environmentId)) };
    },

    removeEnvironmentRuns({ tenantId, environmentId }) {
      return lifecycle.removeRuns(tenantId, environmentId);
    },

    purgeMaterializationFiles({ tenantId, environmentId, after }) {
      // The prefix is listed itself: files the engine wrote without a record (an earlier environment of the same prefix) go too.
      return purge.removePage(tenantId, environmentId, after);
    },

    removeEnvironment({ tenantId, environmentId }) {
      return lifecycle.remove(tenantId, environmentId);
    },

    async noticeEnvironmentExpiry({ tenantId, environmentId, expiresAt }) {
      return { noticed: await environments.noticeExpiry(tenantId, environmentId, new Date(expiresAt)) };
    },

    async expireEnvironment({ tenantId, environmentId }) {
      try {
        return await lifecycle.expire(tenantId, environmentId);
      } catch (error) {
        // Refused now, refused again: the timer ends.
        if (error instanceof ApiError && error.code === 'invalid_request') throw ApplicationFailure.nonRetryable(error.message, 'BadRequest');
        throw error;
      }
    },
  };
}
