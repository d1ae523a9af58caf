import { Router } from 'express';
import { ENGINE_TENANT_ID, InternalApi, PublicApi } from '@envengine/contracts';
import { ApiError, mountEndpoint } from '@envengine/service-kit';
import type { ScheduleTicker } from './schedule-ticker.ts';
import type { SchedulesService } from './schedules.service.ts';

/** Schedules of an environment, their pause and resume (docs/design.md#schedules-pause-and-resume). */
export function schedulesRouter(schedules: SchedulesService): Router {
  const router = Router();

  mountEndpoint(router, PublicApi.listSchedules, async ({ tenantId, params, requestId }) => ({
    data: await schedules.list(tenantId, params.name, requestId),
  }));

  mountEndpoint(router, PublicApi.nextScheduleFireTimes, async ({ tenantId, params, query, requestId }) => ({
    data: await schedules.next(tenantId, params.name, params.schedule, query, requestId),
  }));

  mountEndpoint(router, PublicApi.pauseSchedules, async ({ tenantId, params, body, cause }) => ({
    data: await schedules.pause(tenantId, params.name, body.reason ?? undefined, cause),
  }));

  mountEndpoint(router, PublicApi.resumeSchedules, async ({ tenantId, params, cause }) => ({
    data: await schedules.resume(tenantId, params.name, cause),
  }));

  return router;
}

/**
 * `/internal/v1`: an activation makes an environment's stored schedules its deployment's,
 * the tear-down removes them, and a tick loop asks for a pass over its shard.
 */
export function schedulesInternalRouter(schedules: SchedulesService): Router {
  const router = Router();
  mountEndpoint(router, InternalApi.reconcileSchedules, async ({ tenantId, params, body }) => ({
    data: await schedules.reconcile(tenantId, params.id, body.schedules),
  }));
  mountEndpoint(router, InternalApi.removeSchedules, async ({ tenantId, params }) => ({ data: await schedules.removeAll(tenantId, params.id) }));
  return router;
}

/** `/internal/v1/schedule-ticks/:shard`: engine-wide (no tenant), called by the tick loops only. */
export function scheduleTicksRouter(ticker: ScheduleTicker): Router {
  const router = Router();
  mountEndpoint(router, InternalApi.tickSchedules, async ({ tenantId, params }) => {
    if (tenantId !== ENGINE_TENANT_ID) throw new ApiError('invalid_request', 'A pass of the tick loop is engine-wide: it names the engine, not a tenant.');
    return { data: await ticker.tickShard(params.shard) };
  });
  return router;
}
