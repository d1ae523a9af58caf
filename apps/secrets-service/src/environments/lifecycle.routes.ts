import { Router } from 'express';
import { INTERNAL_API_BASE, InternalApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { BindingRepository } from '../bindings/binding.repository.ts';
import type { SecretAuditRepository } from '../resolution/secret-audit.repository.ts';
import type { SecretsService } from '../secrets/secrets.service.ts';

/** Where `lifecycleRouter` is mounted: a path of its own, since the resolver credential opens the rest of `/internal/v1`. */
export const LIFECYCLE_MOUNT = `${INTERNAL_API_BASE}/lifecycle`;

/**
 * `/internal/v1/lifecycle`: an environment's tear-down step in this scope. Its secrets are
 * retired in their backend (every version destroyed), its bindings deleted, and its audit
 * rows go with it (nothing of a deleted environment is kept). Idempotent: a repeat finds
 * nothing left.
 */
export function lifecycleRouter(secrets: SecretsService, bindings: BindingRepository, audit: SecretAuditRepository): Router {
  const router = Router();
  mountEndpoint(
    router,
    InternalApi.retireEnvironmentSecrets,
    async ({ tenantId, params }) => {
      const retired = await secrets.retireAll(tenantId, params.id);
      const removedBindings = await bindings.removeAll(tenantId, params.id);
      const auditRows = await audit.removeAll(tenantId, params.id);
      return { data: { secrets: retired.secrets, versions: retired.versions, bindings: removedBindings, audit_rows: auditRows } };
    },
    { mountedAt: LIFECYCLE_MOUNT },
  );
  return router;
}
