import { Router } from 'express';
import { InternalApi, PublicApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { PoolService } from './pool.service.ts';

/** `/api/v1/pool…` (docs/design.md#worker-pools-and-the-worker-api). */
export function poolRouter(pool: PoolService): Router {
  const router = Router();
  mountEndpoint(router, PublicApi.getPool, async ({ tenantId }) => ({ data: await pool.status(tenantId) }));
  mountEndpoint(router, PublicApi.createPoolCredential, async ({ tenantId, body, cause }) => ({ status: 201, data: await pool.issue(tenantId, body.label, cause) }));
  mountEndpoint(router, PublicApi.revokePoolCredential, async ({ tenantId, params, cause }) => ({ data: await pool.revoke(tenantId, params.id, cause) }));
  return router;
}

/** `/internal/v1/pool/tokens/:hash`: the gateway's lookup of a pool token's owner. */
export function poolInternalRouter(pool: PoolService): Router {
  const router = Router();
  mountEndpoint(router, InternalApi.poolTokenOwner, async ({ params }) => ({ data: await pool.tokenOwner(params.hash) }));
  return router;
}
