import { Router } from 'express';
import { z } from 'zod';
import { ActivateRequest, DeploymentListQuery, DeploymentPathParams, EnvironmentPathParams } from '@envengine/contracts';
import { defineRoute } from '@envengine/service-kit';
import type { DeploymentsService } from './deployments.service.ts';

/** Deployments (interface: Deployments). */
export function deploymentsRouter(deployments: DeploymentsService): Router {
  const router = Router();

  router.post(
    '/environments/:name/deployments',
    // The body is checked by the ingest itself: what fails it still makes a failed row.
    defineRoute({ params: EnvironmentPathParams, body: z.unknown() }, async ({ tenantId, params, body, requestId }) => {
      const { status, row } = await deployments.ingest(tenantId, params.name, body, requestId);
      return { status, data: row };
    }),
  );

  router.get(
    '/environments/:name/deployments',
    defineRoute({ params: EnvironmentPathParams, query: DeploymentListQuery }, async ({ tenantId, params, query, requestId }) => ({
      data: await deployments.list(tenantId, params.name, { activeOnly: query.active === 'true', limit: query.limit, cursor: query.cursor }, requestId),
    })),
  );

  router.get(
    '/deployments/:id',
    defineRoute({ params: DeploymentPathParams }, async ({ tenantId, params, requestId }) => ({
      data: await deployments.get(tenantId, params.id, requestId),
    })),
  );

  router.post(
    '/deployments/:id/activate',
    defineRoute({ params: DeploymentPathParams, body: ActivateRequest, bodyOptional: true }, async ({ tenantId, params }) => ({
      data: await deployments.activate(tenantId, params.id),
    })),
  );

  return router;
}
