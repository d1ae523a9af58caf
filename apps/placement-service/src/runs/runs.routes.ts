import { Router } from 'express';
import { EnvironmentPathParams, PublicApi, ScheduledRunRequest } from '@envengine/contracts';
import { defineRoute, mountEndpoint } from '@envengine/service-kit';
import type { RunsService } from './runs.service.ts';

/** Runs (DESIGN.md §5 "Runs and attempts"). */
export function runsRouter(runs: RunsService): Router {
  const router = Router();

  mountEndpoint(router, PublicApi.createRun, async ({ tenantId, params, body, requestId }) => ({
    status: 201,
    data: await runs.create(tenantId, params.name, body, { trigger: 'manual', schedule: null, tick: null }, requestId),
  }));

  mountEndpoint(router, PublicApi.listRuns, async ({ tenantId, params, query }) => ({ data: await runs.list(tenantId, params.name, query) }));

  mountEndpoint(router, PublicApi.getRun, async ({ tenantId, params }) => ({ data: await runs.get(tenantId, params.id) }));

  mountEndpoint(router, PublicApi.getRunLogs, async ({ tenantId, params, query }) => ({
    data: await runs.logs(tenantId, params.id, query.after, query.limit),
  }));

  mountEndpoint(router, PublicApi.cancelRun, async ({ tenantId, params }) => ({ data: await runs.cancel(tenantId, params.id) }));

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
