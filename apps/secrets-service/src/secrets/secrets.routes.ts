import { Router } from 'express';
import { EnvironmentPathParams, PutSecretRequest, SecretPathParams } from '@envengine/contracts';
import { defineRoute } from '@envengine/service-kit';
import type { EnvironmentDirectory } from '../environments/environment-directory.ts';
import type { SecretsService } from './secrets.service.ts';

/** Secrets of an environment (interface: Secrets). No route ever answers a value. */
export function secretsRouter(environments: EnvironmentDirectory, secrets: SecretsService): Router {
  const router = Router();

  router.get(
    '/environments/:name/secrets',
    defineRoute({ params: EnvironmentPathParams }, async ({ tenantId, params, requestId }) => {
      const environment = await environments.require(tenantId, params.name, requestId);
      return { data: await secrets.list(tenantId, environment) };
    }),
  );

  router.put(
    '/environments/:name/secrets/:secret',
    defineRoute({ params: SecretPathParams, body: PutSecretRequest }, async ({ tenantId, params, body, requestId }) => {
      const environment = await environments.requireWritable(tenantId, params.name, requestId);
      const { row, created } = await secrets.put(tenantId, environment, params.secret, body.value);
      return { status: created ? 201 : 200, data: row };
    }),
  );

  router.delete(
    '/environments/:name/secrets/:secret',
    defineRoute({ params: SecretPathParams }, async ({ tenantId, params, requestId }) => {
      const environment = await environments.requireWritable(tenantId, params.name, requestId);
      await secrets.delete(tenantId, environment, params.secret, requestId);
      return { data: { name: params.secret } };
    }),
  );

  return router;
}
