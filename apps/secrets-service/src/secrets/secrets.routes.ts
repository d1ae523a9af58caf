import { Router } from 'express';
import { PublicApi } from '@envengine/contracts';
import { defineRoute, mountEndpoint } from '@envengine/service-kit';
import type { EnvironmentDirectory } from '../environments/environment-directory.ts';
import type { SecretsService } from './secrets.service.ts';

/** Secrets of an environment (interface: Secrets). No route ever answers a value. */
export function secretsRouter(environments: EnvironmentDirectory, secrets: SecretsService): Router {
  const router = Router();

  mountEndpoint(router, PublicApi.listSecrets, async ({ tenantId, params, requestId }) => {
    const environment = await environments.require(tenantId, params.name, requestId);
    return { data: await secrets.list(tenantId, environment) };
  });

  mountEndpoint(router, PublicApi.putSecret, async ({ tenantId, params, body, requestId }) => {
    const environment = await environments.requireWritable(tenantId, params.name, requestId);
    const { row, created } = await secrets.put(tenantId, environment, params.secret, body.value);
    return { status: created ? 201 : 200, data: row };
  });

  mountEndpoint(router, PublicApi.deleteSecret, async ({ tenantId, params, requestId }) => {
    const environment = await environments.requireWritable(tenantId, params.name, requestId);
    await secrets.delete(tenantId, environment, params.secret, requestId);
    return { data: { name: params.secret } };
  });

  return router;
}

/** `/internal/v1/quotas`: this scope's part of the placement-service's `GET /quotas`. */
export function secretsQuotaRouter(secrets: SecretsService): Router {
  const router = Router();
  router.get('/', defineRoute({}, async ({ tenantId }) => ({ data: await secrets.quotaUse(tenantId) })));
  return router;
}
