import { Router } from 'express';
import { PublicApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { QuotasService } from './quotas.service.ts';

/** `GET /quotas` (DESIGN.md §5 "Quotas and fair shares"). */
export function quotasRouter(quotas: QuotasService): Router {
  const router = Router();
  mountEndpoint(router, PublicApi.getQuotas, async ({ tenantId, requestId }) => ({ data: await quotas.get(tenantId, requestId) }));
  return router;
}
