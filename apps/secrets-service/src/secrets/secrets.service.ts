import type { Connection } from 'mongoose';
import type { SecretRow, SecretsQuotas } from '@envengine/contracts';
import type { EventCause, EventOutbox } from '@envengine/event-log';
import { isDuplicateKeyError, notFound, quotaExceeded } from '@envengine/service-kit';
import { inTransaction, type TenantQuotas } from '@envengine/tenant-data';
import type { EnvironmentRef } from '../environments/environment-directory.ts';
import type { SecretAuditRepository } from '../resolution/secret-audit.repository.ts';
import type { SecretBackends } from './secret-backend.ts';
import type { SecretRowDocument } from './secret-row.schema.ts';
import type { SecretRowRepository } from './secret-row.repository.ts';

/** The cause of a public request's change: it always has a request id (a retirement's audit row names it). */
type RequestCause = EventCause & { requestId: string };

export function toSecretRow(doc: SecretRowDocument, inheritedFrom: string | null = null): SecretRow {
  return { name: doc.name, backend: doc.backend, version: doc.version, rotated_at: doc.rotated_at.toISOString(), inherited_from: inheritedFrom };
}

/**
 * Writing, listing and retiring secrets. Each change is one transaction: a write moves
 * the row to its next version and stores that version's value together; a deletion
 * removes the row, destroys every value and records the retirement together. A crash at
 * any point leaves the secret as it was before, or entirely changed. A request's change
 * writes its event (name and version, never the value) in that same transaction.
 */
export class SecretsService {
  constructor(
    private readonly connection: Connection,
    private readonly rows: SecretRowRepository,
    private readonly backends: SecretBackends,
    private readonly audit: SecretAuditRepository,
    /** The secrets scope's per-tenant quota documents (secrets per environment). */
    private readonly quotas: TenantQuotas,
    private readonly outbox: EventOutbox,
  ) {}

  /** The secrets quota's limit and the tenant's use by environment id, for `GET /quotas`. */
  async quotaUse(tenantId: string): Promise<SecretsQuotas> {
    const [limits, counts] = await Promise.all([this.quotas.limits(tenantId), this.rows.countsByEnvironment(tenantId)]);
    return { secrets_per_environment: { limit: limits.secrets_per_environment, by_environment_id: counts } };
  }

  /** A preview's own rows, then its parent's that it does not set itself (marked `inherited_from`). */
  async list(tenantId: string, environment: EnvironmentRef): Promise<SecretRow[]> {
    const [own, inherited] = await Promise.all([this.rows.list(tenantId, environment.id), environment.parent ? this.rows.list(tenantId, environment.parent.id) : Promise.resolve([])]);
    const names = new Set(own.map((row) => row.name));
    const rows = [...own.map((row) => toSecretRow(row)), ...inherited.filter((row) => !names.has(row.name)).map((row) => toSecretRow(row, environment.parent!.name))];
    return rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Writes the next version; `created` is true for version 1. A new name past the environment's quota is 429. */
  async put(tenantId: string, environment: EnvironmentRef, name: string, value: string, cause: EventCause): Promise<{ row: SecretRow; created: boolean }> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        // Behind the tenant's quota document: two new secrets of the tenant take turns, so neither misses the other in the count.
        const row = await this.quotas.admission(tenantId, async (session, limits) => {
          if (!(await this.rows.exists(tenantId, environment.id, name, session))) {
            const held = await this.rows.countInEnvironment(tenantId, environment.id, limits.secrets_per_environment, session);
            if (held >= limits.secrets_per_environment) {
              throw quotaExceeded('secrets_per_environment', limits.secrets_per_environment, `Environment "${environment.name}" has ${held} secrets already.`);
            }
          }
          const at = new Date();
          const next = await this.rows.nextVersion(tenantId, environment.id, name, this.backends.defaultName, at, session);
          await this.backends.get(next.backend).store(tenantId, next._id, next.version, value, at, session);
          await this.outbox.record(
            tenantId,
            { type: next.version === 1 ? 'secret.created' : 'secret.rotated', environment, subject: { kind: 'secret', id: name }, cause, data: { version: next.version } },
            session,
          );
          return next;
        });
        return { row: toSecretRow(row), created: row.version === 1 };
      } catch (error) {
        // Two first writes of one name: the loser's insert met the winner's row; it is a rotation now.
        if (!isDuplicateKeyError(error) || attempt >= 3) throw error;
      }
    }
  }

  /** Retires the secret in its backend and removes its row; 404 when there is none. */
  async delete(tenantId: string, environment: EnvironmentRef, name: string, cause: RequestCause): Promise<void> {
    const removed = await inTransaction(this.connection, async (session) => {
      const row = await this.rows.removeByName(tenantId, environment.id, name, session);
      if (!row) return null;
      await this.backends.get(row.backend).retire(tenantId, row._id, session);
      await this.audit.recordRetirement(
        { tenantId, environmentId: environment.id, secret: row.name, secretId: row._id, lastVersion: row.version, requestId: cause.requestId },
        session,
      );
      await this.outbox.record(tenantId, { type: 'secret.deleted', environment, subject: { kind: 'secret', id: row.name }, cause, data: { version: row.version } }, session);
      return row;
    });
    if (!removed) throw notFound(`Secret "${name}" of environment "${environment.name}"`);
  }

  /**
   * An environment's tear-down: each secret retired as a delete retires it (row removed,
   * every version destroyed in its backend, in one transaction); how many, and versions.
   * No event per secret: the environment's own `environment.deleted` stands for them.
   */
  async retireAll(tenantId: string, environmentId: string): Promise<{ secrets: number; versions: number }> {
    let retired = 0;
    let versions = 0;
    for (const row of await this.rows.list(tenantId, environmentId)) {
      const destroyed = await inTransaction(this.connection, async (session) => {
        const removed = await this.rows.removeByName(tenantId, environmentId, row.name, session);
        if (!removed) return 0;
        return (await this.backends.get(removed.backend).retire(tenantId, removed._id, session)).destroyed;
      });
      retired += 1;
      versions += destroyed;
    }
    return { secrets: retired, versions };
  }
}
