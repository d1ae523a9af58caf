import { Router } from 'express';
import { PublicApi, type Environment } from '@envengine/contracts';
import { storagePrefixProblem } from '@envengine/materialization-storage';
import { ApiError, environmentOutsideToken, mountEndpoint, notFound } from '@envengine/service-kit';
import type { EnvironmentLifecycle } from './environment-lifecycle.ts';
import { previewPrefixUnder, type EnvironmentRepository } from '../environments/environment.repository.ts';

function found(environment: Environment | undefined, name: string): Environment {
  if (!environment) throw notFound(`Environment "${name}"`);
  return environment;
}

/** Environments and placement (interface: Environments); schedule pausing is in `schedules/`. */
export function environmentsRouter(environments: EnvironmentRepository, lifecycle: EnvironmentLifecycle, storageRootPath: string): Router {
  const router = Router();

  mountEndpoint(router, PublicApi.listEnvironments, async ({ tenantId, environments: access }) => ({
    data: (await environments.list(tenantId)).filter((environment) => access.allows(environment.name)),
  }));

  mountEndpoint(router, PublicApi.createEnvironment, async ({ tenantId, body, cause, environments: access }) => {
    if (!access.allows(body.name)) throw environmentOutsideToken(body.name, access.patterns!);
    // A parent the token cannot see does not exist for it: a `pr-*` token makes no preview of prod.
    const parent = body.parent === undefined ? null : access.allows(body.parent) ? await environments.findByName(tenantId, body.parent) : undefined;
    if (parent === undefined) throw new ApiError('not_found', `The parent environment "${body.parent}" was not found.`, { details: [{ path: 'parent', message: 'names no environment of yours' }] });
    if (parent?.kind === 'preview') {
      throw new ApiError('invalid_request', `The parent "${parent.name}" is a preview itself; a preview branches from a persistent environment.`, { details: [{ path: 'parent', message: 'must not be a preview' }] });
    }
    const storagePrefix = body.storage_prefix ?? previewPrefixUnder(parent!.storage_prefix, body.name);
    const problem = storagePrefixProblem(storagePrefix, storageRootPath);
    if (problem) throw new ApiError('invalid_request', problem, { details: [{ path: 'storage_prefix', message: problem }] });
    const created = await lifecycle.create(tenantId, { ...body, storage_prefix: storagePrefix }, cause, (name) => access.allows(name), parent && { id: parent.id, name: parent.name });
    return { status: 201, data: created };
  });

  mountEndpoint(router, PublicApi.getEnvironment, async ({ tenantId, params }) => {
    const environment = await environments.findByName(tenantId, params.name);
    if (!environment) throw await lifecycle.missing(tenantId, params.name);
    return { data: environment };
  });

  mountEndpoint(router, PublicApi.updateEnvironment, async ({ tenantId, params, body, cause }) => ({
    data: await lifecycle.patch(tenantId, params.name, body, cause),
  }));

  mountEndpoint(router, PublicApi.deleteEnvironment, async ({ tenantId, params, query, cause }) => ({
    data: await lifecycle.delete(tenantId, params.name, query, cause),
  }));

  mountEndpoint(router, PublicApi.setPlacementForAll, async ({ tenantId, body, cause }) => ({
    data: { executor: body.executor, environments: await environments.setExecutorForAll(tenantId, body.executor, cause) },
  }));

  mountEndpoint(router, PublicApi.setPlacement, async ({ tenantId, params, body, cause }) => ({
    data: found(await environments.setExecutor(tenantId, params.name, body.executor, cause), params.name),
  }));

  return router;
}
