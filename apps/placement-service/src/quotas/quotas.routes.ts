import { Router } from 'express';
import { environmentQuotaUse, PublicApi, type EnvironmentAccess, type EnvironmentQuotaUse } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { QuotasService } from './quotas.service.ts';

/** A per-environment quota as a token limited to environments sees it: only its environments are named, and the fullest is among them. */
function visibleUse(use: EnvironmentQuotaUse, environments: EnvironmentAccess): EnvironmentQuotaUse {
  return environmentQuotaUse(use.limit, Object.fromEntries(Object.entries(use.by_environment).filter(([name]) => environments.allows(name))));
}

/** `GET /quotas` (docs/design.md#quotas-and-fair-shares). */
export function quotasRouter(quotas: QuotasService): Router {
  const router = Router();
  mountEndpoint(router, PublicApi.getQuotas, async ({ tenantId, requestId, environments }) => {
    const data = await quotas.get(tenantId, requestId);
    if (!environments.restricted) return { data };
    return {
      data: {
        ...data,
        queued_runs_per_environment: visibleUse(data.queued_runs_per_environment, environments),
        secrets_per_environment: visibleUse(data.secrets_per_environment, environments),
      },
    };
  });
  return router;
}
