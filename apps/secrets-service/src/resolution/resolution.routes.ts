import { Router, type RequestHandler } from 'express';
import { InternalApi, RESOLVER_CALLER_HEADER, RESOLVER_CALLER_PATTERN } from '@envengine/contracts';
import { ApiError, mountEndpoint } from '@envengine/service-kit';
import type { BindingRepository } from '../bindings/binding.repository.ts';
import type { BindingResolver } from './binding-resolver.ts';

/** The process that asks, for the audit log: a resolution without it is refused. */
function callerOf(value: string | undefined): string {
  if (value === undefined || !RESOLVER_CALLER_PATTERN.test(value)) {
    throw new ApiError('invalid_request', `The ${RESOLVER_CALLER_HEADER} header must name the calling process.`, {
      details: [{ path: RESOLVER_CALLER_HEADER, message: 'is required: 1-200 printable characters' }],
    });
  }
  return value;
}

// Checked ahead of the body, so a caller without its name learns that first.
const requireCaller: RequestHandler = (req, _res, next) => {
  try {
    callerOf(req.get(RESOLVER_CALLER_HEADER));
    next();
  } catch (error) {
    next(error);
  }
};

/** `/internal/v1`: for the attempt runner and remote workers, behind the resolver credential. */
export function resolutionRouter(resolver: BindingResolver, bindings: BindingRepository): Router {
  const router = Router();
  // An attempt's plan: each binding's mode, by the environment's id (no name to look up again).
  // A preview's inherits its parent's (`parent_id`) where it sets none of that name.
  mountEndpoint(router, InternalApi.bindingModes, async ({ tenantId, params, query }) => {
    const [own, parents] = await Promise.all([bindings.list(tenantId, params.id), query.parent_id ? bindings.list(tenantId, query.parent_id) : Promise.resolve([])]);
    const names = new Set(own.map((binding) => binding.name));
    return { data: [...own, ...parents.filter((binding) => !names.has(binding.name))].map((binding) => ({ name: binding.name, mode: binding.mode })) };
  });
  mountEndpoint(
    router,
    InternalApi.resolveBinding,
    async ({ tenantId, body, requestId, header }) => ({
      data: await resolver.resolve({
        tenantId,
        environmentId: body.environment_id,
        ...(body.parent_environment_id ? { parentEnvironmentId: body.parent_environment_id } : {}),
        binding: body.binding,
        attemptId: body.attempt_id,
        caller: callerOf(header(RESOLVER_CALLER_HEADER)),
        requestId,
      }),
    }),
    { before: [requireCaller] },
  );
  return router;
}
