import { Router } from 'express';
import { EnvironmentPathParams, ScheduleNextQuery, SchedulePathParams, ScheduleToggleRequest } from '@envengine/contracts';
import { defineRoute } from '@envengine/service-kit';
import type { SchedulesService } from './schedules.service.ts';

/** Schedules of an environment, their pause and resume (DESIGN.md §5 "Schedules, pause and resume"). */
export function schedulesRouter(schedules: SchedulesService): Router {
  const router = Router();

  router.get(
    '/environments/:name/schedules',
    defineRoute({ params: EnvironmentPathParams }, async ({ tenantId, params, requestId }) => ({
      data: await schedules.list(tenantId, params.name, requestId),
    })),
  );

  router.get(
    '/environments/:name/schedules/:schedule/next',
    defineRoute({ params: SchedulePathParams, query: ScheduleNextQuery }, async ({ tenantId, params, query, requestId }) => ({
      data: await schedules.next(tenantId, params.name, params.schedule, query, requestId),
    })),
  );

  router.post(
    '/environments/:name/schedules/pause',
    defineRoute(
      { params: EnvironmentPathParams, body: ScheduleToggleRequest, bodyOptional: true },
      async ({ tenantId, params, body, requestId }) => ({
        data: await schedules.pause(tenantId, params.name, body.reason ?? undefined, requestId),
      }),
    ),
  );

  router.post(
    '/environments/:name/schedules/resume',
    defineRoute(
      { params: EnvironmentPathParams, body: ScheduleToggleRequest, bodyOptional: true },
      async ({ tenantId, params, requestId }) => ({ data: await schedules.resume(tenantId, params.name, requestId) }),
    ),
  );

  return router;
}
