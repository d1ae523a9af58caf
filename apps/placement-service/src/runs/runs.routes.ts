import { Router } from 'express';
import {
  CancelRunRequest,
  CreateRunRequest,
  EnvironmentPathParams,
  RunListQuery,
  RunLogsQuery,
  RunPathParams,
  ScheduledRunRequest,
} from '@envengine/contracts';
import { defineRoute } from '@envengine/service-kit';
import type { RunsService } from './runs.service.ts';

/** Runs (DESIGN.md §5 "Runs and attempts"). */
export function runsRouter(runs: RunsService): Router {
  const router = Router();

  router.post(
    '/environments/:name/runs',
    defineRoute({ params: EnvironmentPathParams, body: CreateRunRequest }, async ({ tenantId, params, body, requestId }) => ({
      status: 201,
      data: await runs.create(tenantId, params.name, body, { trigger: 'manual', schedule: null, tick: null }, requestId),
    })),
  );

  router.get(
    '/environments/:name/runs',
    defineRoute({ params: EnvironmentPathParams, query: RunListQuery }, async ({ tenantId, params, query }) => ({
      data: await runs.list(tenantId, params.name, query),
    })),
  );

  router.get(
    '/runs/:id',
    defineRoute({ params: RunPathParams }, async ({ tenantId, params }) => ({ data: await runs.get(tenantId, params.id) })),
  );

  router.get(
    '/runs/:id/logs',
    defineRoute({ params: RunPathParams, query: RunLogsQuery }, async ({ tenantId, params, query }) => ({
      data: await runs.logs(tenantId, params.id, query.after, query.limit),
    })),
  );

  router.post(
    '/runs/:id/cancel',
    defineRoute({ params: RunPathParams, body: CancelRunRequest, bodyOptional: true }, async ({ tenantId, params }) => ({
      data: await runs.cancel(tenantId, params.id),
    })),
  );

  return router;
}

/** `/internal/v1`: a schedule's tick asks for its run. */
export function runsInternalRouter(runs: RunsService): Router {
  const router = Router();
  router.post(
    '/environments/:name/scheduled-runs',
    defineRoute({ params: EnvironmentPathParams, body: ScheduledRunRequest }, async ({ tenantId, params, body }) => ({
      data: await runs.createScheduled(tenantId, params.name, body),
    })),
  );
  return router;
}
