import { Router } from 'express';
import { PublicApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { SchedulesService } from './schedules.service.ts';

/** Schedules of an environment, their pause and resume (DESIGN.md §5 "Schedules, pause and resume"). */
export function schedulesRouter(schedules: SchedulesService): Router {
  const router = Router();

  mountEndpoint(router, PublicApi.listSchedules, async ({ tenantId, params, requestId }) => ({
    data: await schedules.list(tenantId, params.name, requestId),
  }));

  mountEndpoint(router, PublicApi.nextScheduleFireTimes, async ({ tenantId, params, query, requestId }) => ({
    data: await schedules.next(tenantId, params.name, params.schedule, query, requestId),
  }));

  mountEndpoint(router, PublicApi.pauseSchedules, async ({ tenantId, params, body, requestId }) => ({
    data: await schedules.pause(tenantId, params.name, body.reason ?? undefined, requestId),
  }));

  mountEndpoint(router, PublicApi.resumeSchedules, async ({ tenantId, params, requestId }) => ({
    data: await schedules.resume(tenantId, params.name, requestId),
  }));

  return router;
}
