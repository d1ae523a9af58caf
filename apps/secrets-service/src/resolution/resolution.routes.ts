import { Router } from 'express';
import { BindingModesParams, RESOLVER_CALLER_HEADER, ResolveBindingRequest } from '@envengine/contracts';
import { ApiError, defineRoute } from '@envengine/service-kit';
import type { BindingRepository } from '../bindings/binding.repository.ts';
import type { BindingResolver } from './binding-resolver.ts';

const CALLER_PATTERN = /^[\x21-\x7e][\x20-\x7e]{0,199}$/;

/** `/internal/v1`: for the attempt runner and remote workers, behind the resolver credential. */
export function resolutionRouter(resolver: BindingResolver, bindings: BindingRepository): Router {
  const router = Router();
  // An attempt's plan: each binding's mode, by the environment's id (no name to look up again).
  router.get(
    '/environments/:id/binding-modes',
    defineRoute({ params: BindingModesParams }, async ({ tenantId, params }) => ({
      data: (await bindings.list(tenantId, params.id)).map((binding) => ({ name: binding.name, mode: binding.mode })),
    })),
  );
  router.post('/bindings/resolve', (req, res, next) => {
    const caller = req.headers[RESOLVER_CALLER_HEADER];
    if (typeof caller !== 'string' || !CALLER_PATTERN.test(caller)) {
      next(
        new ApiError('invalid_request', `The ${RESOLVER_CALLER_HEADER} header must name the calling process.`, {
          details: [{ path: RESOLVER_CALLER_HEADER, message: 'is required: 1-200 printable characters' }],
        }),
      );
      return;
    }
    return defineRoute({ body: ResolveBindingRequest }, async ({ tenantId, body, requestId }) => ({
      data: await resolver.resolve({
        tenantId,
        environmentId: body.environment_id,
        binding: body.binding,
        attemptId: body.attempt_id,
        caller,
        requestId,
      }),
    }))(req, res, next);
  });
  return router;
}
