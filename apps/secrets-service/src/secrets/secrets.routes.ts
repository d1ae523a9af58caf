import { Router } from 'express';
import { INTERNAL_API_BASE, InternalApi, PublicApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { EnvironmentDirectory } from '../environments/environment-directory.ts';
import type { SecretsService } from './secrets.service.ts';

/** Secrets of an environment (interface: Secrets). No route ever answers a value. */
export function secretsRouter(environments: EnvironmentDirectory, secrets: SecretsService): Router {
  const router = Router();

  mountEndpoint(router, PublicApi.listSecrets, async ({ tenantId, params, requestId }) => {
    const environment = await environments.require(tenantId, params.name, requestId);
    return { data: await secrets.list(tenantId, environment) };
  });

  mountEndpoint(router, PublicApi.putSecret, async ({ tenantId, params, body, requestId, cause }) => {
    const environment = await environments.requireWritable(tenantId, params.name, requestId);
    const { row, created } = await secrets.put(tenantId, environment, params.secret, body.value, cause);
    return { status: created ? 201 : 200, data: row };
  });

  mountEndpoint(router, PublicApi.deleteSecret, async ({ tenantId, params, requestId, cause }) => {
    const environment = await environments.requireWritable(tenantId, params.name, requestId);
    await secrets.delete(tenantId, environment, params.secret, cause);
    return { data: { name: params.secret } };
  });

  return router;
}

/** Where `secretsQuotaRouter` is mounted: a path of its own, since the resolver credential opens the rest of `/internal/v1`. */
export const SECRETS_QUOTA_MOUNT = `${INTERNAL_API_BASE}/quotas`;

/** `/internal/v1/quotas`: this scope's part of the placement-service's `GET /quotas`. */
export function secretsQuotaRouter(secrets: SecretsService): Router {
  const router = Router();
  mountEndpoint(router, InternalApi.secretsQuotas, async ({ tenantId }) => ({ data: await secrets.quotaUse(tenantId) }), { mountedAt: SECRETS_QUOTA_MOUNT });
  return router;
}
