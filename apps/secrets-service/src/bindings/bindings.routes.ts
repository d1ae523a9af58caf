import { Router } from 'express';
import { PublicApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { EnvironmentDirectory } from '../environments/environment-directory.ts';
import type { BindingsService } from './bindings.service.ts';

/** Bindings of an environment to named connections (interface: Bindings). */
export function bindingsRouter(environments: EnvironmentDirectory, bindings: BindingsService): Router {
  const router = Router();

  mountEndpoint(router, PublicApi.listBindings, async ({ tenantId, params, requestId }) => {
    const environment = await environments.require(tenantId, params.name, requestId);
    return { data: await bindings.list(tenantId, environment) };
  });

  mountEndpoint(router, PublicApi.putBinding, async ({ tenantId, params, body, requestId, cause }) => {
    const environment = await environments.requireWritable(tenantId, params.name, requestId);
    const { binding, created } = await bindings.put(tenantId, environment, params.connection, body, cause);
    return { status: created ? 201 : 200, data: binding };
  });

  mountEndpoint(router, PublicApi.deleteBinding, async ({ tenantId, params, requestId, cause }) => {
    const environment = await environments.requireWritable(tenantId, params.name, requestId);
    await bindings.delete(tenantId, environment, params.connection, cause);
    return { data: { name: params.connection } };
  });

  return router;
}
