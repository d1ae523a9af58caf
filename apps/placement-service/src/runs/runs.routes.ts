import { Router } from 'express';
import { PublicApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { RunsService } from './runs.service.ts';

/** Runs (docs/design.md#runs-and-attempts). */
export function runsRouter(runs: RunsService): Router {
  const router = Router();

  mountEndpoint(router, PublicApi.createRun, async ({ tenantId, params, body, cause }) => ({
    status: 201,
    data: await runs.create(tenantId, params.name, body, cause),
  }));

  mountEndpoint(router, PublicApi.listRuns, async ({ tenantId, params, query }) => ({ data: await runs.list(tenantId, params.name, query) }));

  mountEndpoint(router, PublicApi.getRun, async ({ tenantId, params, environments }) => ({ data: await runs.get(tenantId, params.id, environments) }));

  mountEndpoint(router, PublicApi.getRunLogs, async ({ tenantId, params, query, environments }) => ({
    data: await runs.logs(tenantId, params.id, query.after, query.limit, environments),
  }));

  mountEndpoint(router, PublicApi.cancelRun, async ({ tenantId, params, cause, environments }) => ({
    data: await runs.cancel(tenantId, params.id, cause, environments),
  }));

  return router;
}
