import { Router } from 'express';
import { EnvironmentPathParams, SetActiveDeploymentRequest } from '@envengine/contracts';
import { defineRoute, notFound } from '@envengine/service-kit';
import type { EnvironmentRepository } from './environment.repository.ts';

/** `/internal/v1`: for the deployment workflows only; the gateway never forwards here. */
export function environmentsInternalRouter(environments: EnvironmentRepository): Router {
  const router = Router();
  router.post(
    '/environments/:name/active-deployment',
    defineRoute({ params: EnvironmentPathParams, body: SetActiveDeploymentRequest }, async ({ tenantId, params, body }) => {
      const environment = await environments.setActiveDeployment(tenantId, params.name, body.deployment_id, body.git_ref);
      if (!environment) throw notFound(`Environment "${params.name}"`);
      return { data: environment };
    }),
  );
  return router;
}
