import type { SecretRow } from '@envengine/contracts';
import { notFound } from '@envengine/service-kit';
import type { EnvironmentRef } from '../environments/environment-directory.ts';
import type { SecretAuditRepository } from '../resolution/secret-audit.repository.ts';
import type { SecretBackends } from './secret-backend.ts';
import type { SecretRowDocument } from './secret-row.schema.ts';
import type { SecretRowRepository } from './secret-row.repository.ts';


/**
 * Writing, listing and retiring secrets. The row and the backend are two stores without
 * a transaction between them, so each flow is ordered to survive a crash between its
 * steps: a write stores its version (the backend hands out the number), then checks that
 * the secret was not deleted meanwhile; a deletion marks the row, records the retirement once,
 * destroys the values, and only then removes the row.
 */
export class SecretsService {
  constructor(
    private readonly rows: SecretRowRepository,
    private readonly backends: SecretBackends,
    private readonly audit: SecretAuditRepository,
  ) {}

  /** Rows with their newest stored version; a secret whose first write has not landed is not listed. */
  async list(tenantId: string, environment: EnvironmentRef): Promise<SecretRow[]> {
    const rows = await this.rows.list(tenantId, environment.id);
    const described = await Promise.all(
      rows.map(async (row) => ({ row, latest: await this.backends.get(row.backend).describeLatest(row.secret_id) })),
    );
    return described.flatMap(({ row, latest }) =>
      latest ? [{ name: row.name, backend: row.backend, version: latest.version, rotated_at: latest.writtenAt.toISOString() }] : [],
    );
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
      const row = await this.rows.findOrCreate(tenantId, environment.id, name, this.backends.defaultName);
      if (row.retiring_at) {
        // A deletion was interrupted: finish it, then this write starts the secret anew.
        await this.retire(tenantId, environment, row, requestId);
        continue;
      }
      const backend = this.backends.get(row.backend);
      const { version, writtenAt } = await backend.store(row.secret_id, value);
      if (!(await this.rows.isLive(row))) {
        // Deleted while this write was in flight: the deletion must cover this version too.
        await backend.retire(row.secret_id);
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
    // A row whose first write has not landed is not a secret anyone has seen.
    const exists = row && (row.retiring_at || (await this.backends.get(row.backend).describeLatest(row.secret_id)));
    if (!row || !exists) throw notFound(`Secret "${name}" of environment "${environment.name}"`);
    await this.retire(tenantId, environment, row, requestId);
  }

  private async retire(tenantId: string, environment: EnvironmentRef, row: SecretRowDocument, requestId: string): Promise<void> {
    await this.rows.markRetiring(row);
    await this.audit.recordRetirement({
      tenantId,
      environmentId: environment.id,
      secret: row.name,
      secretId: row.secret_id,
      lastVersion: (await this.backends.get(row.backend).describeLatest(row.secret_id))?.version ?? 0,
      requestId,
    });
    await this.backends.get(row.backend).retire(row.secret_id);
    await this.rows.remove(row);
  }
}
