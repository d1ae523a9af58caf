import { Router } from 'express';
import { INTERNAL_API_BASE, InternalApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { environmentRetirement } from './environment-retirement.ts';

/** Where `lifecycleRouter` is mounted: a path of its own, since the resolver credential opens the rest of `/internal/v1`. */
export const LIFECYCLE_MOUNT = `${INTERNAL_API_BASE}/lifecycle`;

/**
 * `/internal/v1/lifecycle`: an environment's tear-down step in this scope
 * (environment-retirement.ts), for a tear-down whose history began before this scope served
 * it on its own task queue.
 */
export function lifecycleRouter(retire: ReturnType<typeof environmentRetirement>): Router {
  const router = Router();
  mountEndpoint(router, InternalApi.retireEnvironmentSecrets, async ({ tenantId, params }) => ({ data: await retire(tenantId, params.id) }), { mountedAt: LIFECYCLE_MOUNT });
  return router;
}
