import { Router } from 'express';
import { BindingPathParams, EnvironmentPathParams, PutBindingRequest } from '@envengine/contracts';
import { defineRoute } from '@envengine/service-kit';
import type { EnvironmentDirectory } from '../environments/environment-directory.ts';
import type { BindingsService } from './bindings.service.ts';

/** Bindings of an environment to named connections (interface: Bindings). */
export function bindingsRouter(environments: EnvironmentDirectory, bindings: BindingsService): Router {
  const router = Router();

  router.get(
    '/environments/:name/bindings',
    defineRoute({ params: EnvironmentPathParams }, async ({ tenantId, params, requestId }) => {
      const environment = await environments.require(tenantId, params.name, requestId);
      return { data: await bindings.list(tenantId, environment) };
    }),
  );

  router.put(
    '/environments/:name/bindings/:connection',
    defineRoute(
      { params: BindingPathParams, body: PutBindingRequest, bodyOptional: true },
      async ({ tenantId, params, body, requestId }) => {
        const environment = await environments.requireWritable(tenantId, params.name, requestId);
        const { binding, created } = await bindings.put(tenantId, environment, params.connection, body);
        return { status: created ? 201 : 200, data: binding };
      },
    ),
  );

  router.delete(
    '/environments/:name/bindings/:connection',
    defineRoute({ params: BindingPathParams }, async ({ tenantId, params, requestId }) => {
      const environment = await environments.requireWritable(tenantId, params.name, requestId);
      await bindings.delete(tenantId, environment, params.connection);
      return { data: { name: params.connection } };
    }),
  );

  return router;
}
