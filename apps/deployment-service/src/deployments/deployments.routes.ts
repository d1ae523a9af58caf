import { Router } from 'express';
import { PublicApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { DeploymentsService } from './deployments.service.ts';

/** Deployments (interface: Deployments). */
export function deploymentsRouter(deployments: DeploymentsService): Router {
  const router = Router();

  // The body is checked by the ingest itself: what fails it still makes a failed row.
  mountEndpoint(router, PublicApi.createDeployment, async ({ tenantId, params, body, requestId, cause }) => {
    const outcome = await deployments.ingest(tenantId, params.name, body, requestId, cause);
    return outcome.status === 202 ? { status: 202, data: outcome.row } : { status: outcome.status, data: outcome.row };
  });

  mountEndpoint(router, PublicApi.listDeployments, async ({ tenantId, params, query, requestId }) => ({
    data: await deployments.list(tenantId, params.name, { activeOnly: query.active === 'true', limit: query.limit, cursor: query.cursor }, requestId),
  }));

  mountEndpoint(router, PublicApi.getDeployment, async ({ tenantId, params, requestId, environments }) => ({
    data: await deployments.get(tenantId, params.id, requestId, environments),
  }));

  mountEndpoint(router, PublicApi.activateDeployment, async ({ tenantId, params, cause, environments }) => ({
    data: await deployments.activate(tenantId, params.id, cause, environments),
  }));

  return router;
}
