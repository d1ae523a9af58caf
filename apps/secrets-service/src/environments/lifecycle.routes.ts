import { Router } from 'express';
import { EnvironmentIdParams } from '@envengine/contracts';
import { defineRoute } from '@envengine/service-kit';
import type { BindingRepository } from '../bindings/binding.repository.ts';
import type { SecretAuditRepository } from '../resolution/secret-audit.repository.ts';
import type { SecretsService } from '../secrets/secrets.service.ts';

/**
 * `/internal/v1/lifecycle`: an environment's tear-down step in this scope. Its secrets are
 * retired in their backend (every version destroyed), its bindings deleted, and its audit
 * rows go with it (nothing of a deleted environment is kept). Idempotent: a repeat finds
 * nothing left.
 */
export function lifecycleRouter(secrets: SecretsService, bindings: BindingRepository, audit: SecretAuditRepository): Router {
  const router = Router();
  router.delete(
    '/environments/:id',
    defineRoute({ params: EnvironmentIdParams }, async ({ tenantId, params }) => {
      const retired = await secrets.retireAll(tenantId, params.id);
      const removedBindings = await bindings.removeAll(tenantId, params.id);
      const auditRows = await audit.removeAll(tenantId, params.id);
      return { data: { secrets: retired.secrets, versions: retired.versions, bindings: removedBindings, audit_rows: auditRows } };
    }),
  );
  return router;
}
