import type { SecretRow } from '@envengine/contracts';
import { notFound } from '@envengine/service-kit';
import type { EnvironmentRef } from '../environments/environment-directory.ts';
import type { SecretAuditRepository } from '../resolution/secret-audit.repository.ts';
import type { SecretBackends } from './secret-backend.ts';
import type { SecretRowDocument } from './secret-row.schema.ts';
import type { SecretRowRepository } from './secret-row.repository.ts';

function toSecretRow(doc: SecretRowDocument): SecretRow {
  return {
    name: doc.name,
    backend: doc.backend,
    version: doc.version,
    rotated_at: (doc.rotated_at ?? doc.created_at).toISOString(),
  };
}

/**
 * Writing, listing and retiring secrets. The row and the backend are two stores without
 * a transaction between them, so each flow is ordered to survive a crash between its steps:
 * a write reaches the backend before the row names its version, and a deletion marks the
 * row, records the retirement once, destroys the values, and only then removes the row.
 */
export class SecretsService {
  constructor(
    private readonly rows: SecretRowRepository,
    private readonly backends: SecretBackends,
    private readonly audit: SecretAuditRepository,
  ) {}

  async list(tenantId: string, environment: EnvironmentRef): Promise<SecretRow[]> {
    return (await this.rows.list(tenantId, environment.id)).map(toSecretRow);
  }

  /** Writes the next version; `created` is true for version 1. */
  async put(
    tenantId: string,
    environment: EnvironmentRef,
    name: string,
    value: string,
    requestId: string,
  ): Promise<{ row: SecretRow; created: boolean }> {
    for (;;) {
      const row = await this.rows.claim(tenantId, environment.id, name, this.backends.defaultName);
      if (row.retiring_at) {
        // A deletion was interrupted: finish it, then this write starts the secret anew.
        await this.retire(tenantId, environment, row, requestId);
        continue;
      }
      const backend = this.backends.get(row.backend);
      const { version } = await backend.write(row._id, value);
      const writtenAt = new Date();
      const outcome = await this.rows.publish(row._id, version, writtenAt);
      if (outcome === 'gone') {
        // Deleted while this write was in flight: the deletion must also cover this version.
        await backend.retire(row._id);
        continue;
      }
      return {
        row: { name, backend: row.backend, version, rotated_at: writtenAt.toISOString() },
        created: version === 1,
      };
    }
  }

  /**
   * Retires the secret in its backend and removes its row; 404 when there is none. A row
   * left marked by an interrupted deletion is finished, so a retried DELETE succeeds.
   */
  async delete(tenantId: string, environment: EnvironmentRef, name: string, requestId: string): Promise<void> {
    const row = await this.rows.find(tenantId, environment.id, name);
    // Version 0: the first write has not finished, and no reader has seen the secret.
    if (!row || (row.version === 0 && !row.retiring_at)) {
      throw notFound(`Secret "${name}" of environment "${environment.name}"`);
    }
    await this.retire(tenantId, environment, row, requestId);
  }

  private async retire(tenantId: string, environment: EnvironmentRef, row: SecretRowDocument, requestId: string): Promise<void> {
    const backend = this.backends.get(row.backend);
    await this.rows.markRetiring(row._id);
    await this.audit.recordRetirement({
      tenantId,
      environmentId: environment.id,
      secret: row.name,
      secretId: row._id,
      lastVersion: row.version,
      requestId,
    });
    await backend.retire(row._id);
    await this.rows.remove(row._id);
  }
}
