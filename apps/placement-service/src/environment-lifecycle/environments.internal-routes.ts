import { Router } from 'express';
import { InternalApi } from '@envengine/contracts';
import { mountEndpoint, notFound } from '@envengine/service-kit';
import type { EnvironmentLifecycle } from './environment-lifecycle.ts';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { MaterializationPurge } from './materialization-purge.ts';

/** `/internal/v1`: for the deployment scope and the lifecycle workflows only; the gateway never forwards here. */
export function environmentsInternalRouter(environments: EnvironmentRepository, lifecycle: EnvironmentLifecycle, purge: MaterializationPurge): Router {
  const router = Router();
  mountEndpoint(router, InternalApi.setActiveDeployment, async ({ tenantId, params, body }) => {
    const environment = await environments.setActiveDeployment(tenantId, params.name, body.deployment_id, body.git_ref);
    if (!environment) throw notFound(`Environment "${params.name}"`);
    return { data: environment };
  });
  // A deploy arrived: a preview's expiry moves (the deployment-service asks before its ingest starts).
  mountEndpoint(router, InternalApi.extendEnvironmentTtl, async ({ tenantId, params }) => ({ data: await lifecycle.extendTtl(tenantId, params.name) }));
  // The steps of the lifecycle workflows on this scope's data.
  mountEndpoint(router, InternalApi.expireEnvironment, async ({ tenantId, params }) => ({ data: await lifecycle.expire(tenantId, params.id) }));
  mountEndpoint(router, InternalApi.noticeEnvironmentExpiry, async ({ tenantId, params, body }) => ({ data: { noticed: await environments.noticeExpiry(tenantId, params.id, new Date(body.expires_at)) } }));
  mountEndpoint(router, InternalApi.removeEnvironmentRuns, async ({ tenantId, params }) => ({ data: await lifecycle.removeRuns(tenantId, params.id) }));
  mountEndpoint(router, InternalApi.purgeEnvironmentFiles, async ({ tenantId, params, body }) => ({
    data: await purge.removePage(tenantId, params.id, body.after),
  }));
  mountEndpoint(router, InternalApi.removeEnvironment, async ({ tenantId, params }) => {
    await lifecycle.remove(tenantId, params.id);
    return { data: { removed: 1 } };
  });
  return router;
}
