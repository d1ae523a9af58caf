import { Router } from 'express';
import { PublicApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { DeploymentDiffs } from './deployment-diffs.ts';
import type { DeploymentsService } from './deployments.service.ts';

/** Deployments (interface: Deployments), their promotion and their diffs. */
export function deploymentsRouter(deployments: DeploymentsService, diffs: DeploymentDiffs): Router {
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

  mountEndpoint(router, PublicApi.promoteDeployment, async ({ tenantId, params, body, requestId, cause, environments }) => {
    const outcome = await deployments.promote(tenantId, params.id, body, requestId, cause, environments);
    return outcome.status === 202 ? { status: 202, data: outcome.row } : { status: outcome.status, data: outcome.row };
  });

  mountEndpoint(router, PublicApi.diffDeployment, async ({ tenantId, params, query, requestId, environments }) => ({
    data: await diffs.diff(tenantId, params.id, query.base, requestId, environments),
  }));

  return router;
}
