import type { TeardownStepReport } from '@envengine/contracts';
import type { BindingRepository } from '../bindings/binding.repository.ts';
import type { SecretAuditRepository } from '../resolution/secret-audit.repository.ts';
import type { SecretsService } from '../secrets/secrets.service.ts';

/**
 * An environment's tear-down step in this scope: its secrets retired in their backend (every
 * version destroyed), its bindings deleted, and its audit rows with them (nothing of a
 * deleted environment is kept). Idempotent: a repeat finds nothing left. Served as an
 * activity on this scope's own queue (lifecycle-activities.ts), and over the internal API
 * for a tear-down begun before that (lifecycle.routes.ts).
 */
export function environmentRetirement(secrets: SecretsService, bindings: BindingRepository, audit: SecretAuditRepository) {
  return async (tenantId: string, environmentId: string): Promise<TeardownStepReport> => {
    const retired = await secrets.retireAll(tenantId, environmentId);
    const removedBindings = await bindings.removeAll(tenantId, environmentId);
    const auditRows = await audit.removeAll(tenantId, environmentId);
    return { secrets: retired.secrets, versions: retired.versions, bindings: removedBindings, audit_rows: auditRows };
  };
}
