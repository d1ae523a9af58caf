import type { ResolvedBinding, ResolvedSecretVersion } from '@envengine/contracts';
import { ApiError, notFound } from '@envengine/service-kit';
import type { BindingRepository } from '../bindings/binding.repository.ts';
import type { SecretBackends } from '../secrets/secret-backend.ts';
import type { SecretRowRepository } from '../secrets/secret-row.repository.ts';
import type { SecretRowDocument } from '../secrets/secret-row.schema.ts';
import type { SecretAuditRepository } from './secret-audit.repository.ts';

export interface ResolveRequest {
  tenantId: string;
  environmentId: string;
  /** A preview's parent: its binding of that name when the preview has none, its secrets for the names the preview lacks. */
  parentEnvironmentId?: string;
  binding: string;
  attemptId: string | undefined;
  caller: string;
  requestId: string;
}

/**
 * Gives a worker a binding's config with each secret reference replaced by its value.
 * Every call leaves an audit record (who, which binding, which versions, when); values
 * go only into the response to the caller holding the resolver credential.
 */
export class BindingResolver {
  constructor(
    private readonly bindings: BindingRepository,
    private readonly rows: SecretRowRepository,
    private readonly backends: SecretBackends,
    private readonly audit: SecretAuditRepository,
  ) {}

  async resolve(request: ResolveRequest): Promise<ResolvedBinding> {
    const parentId = request.parentEnvironmentId;
    const binding =
      (await this.bindings.find(request.tenantId, request.environmentId, request.binding)) ??
      (parentId === undefined ? undefined : await this.bindings.find(request.tenantId, parentId, request.binding));
    if (!binding) throw notFound(`Binding "${request.binding}" of environment ${request.environmentId}`);

    const names = binding.secret_refs.map((ref) => ref.secret);
    const rows = await this.rows.findByNames(request.tenantId, request.environmentId, names);
    // The preview's own secret of a name first, then its parent's.
    const lacking = names.filter((name) => !rows.has(name));
    if (parentId !== undefined && lacking.length > 0) {
      for (const [name, row] of await this.rows.findByNames(request.tenantId, parentId, lacking)) rows.set(name, row);
    }
    const values = await this.readCurrentValues(request.tenantId, [...rows.values()]);
    const config = JSON.parse(binding.config_json) as Record<string, unknown>;
    const versions: ResolvedSecretVersion[] = [];
    for (const ref of binding.secret_refs) {
      const row = rows.get(ref.secret);
      const value = row && values.get(row._id);
      if (!row || value === undefined) {
        const reason = `Binding "${binding.name}" refers to secret "${ref.secret}" (setting "${ref.setting}"), which the environment no longer has.`;
        await this.record(request, versions, 'refused', reason);
        throw new ApiError('unknown_secret', reason, {
          details: [{ path: `secret_refs.${ref.setting}`, message: `secret "${ref.secret}" is missing` }],
        });
      }
      config[ref.setting] = value;
      versions.push({ setting: ref.setting, secret: ref.secret, version: row.version });
    }
    await this.record(request, versions, 'resolved');
    return { name: binding.name, mode: binding.mode, config, secret_versions: versions };
  }

  /** The current version's value of each row, by secret id: one read per backend. */
  private async readCurrentValues(tenantId: string, rows: SecretRowDocument[]): Promise<Map<string, string>> {
    const byBackend = new Map<string, SecretRowDocument[]>();
    for (const row of rows) byBackend.set(row.backend, [...(byBackend.get(row.backend) ?? []), row]);
    const maps = await Promise.all(
      [...byBackend].map(([backend, of]) => this.backends.get(backend).readVersions(tenantId, of.map((row) => ({ secretId: row._id, version: row.version })))),
    );
    return new Map(maps.flatMap((map) => [...map]));
  }

  private record(
    request: ResolveRequest,
    secrets: ResolvedSecretVersion[],
    outcome: 'resolved' | 'refused',
    reason?: string,
  ): Promise<void> {
    return this.audit.recordResolution({
      tenantId: request.tenantId,
      environmentId: request.environmentId,
      caller: request.caller,
      attemptId: request.attemptId,
      binding: request.binding,
      secrets,
      outcome,
      reason,
      requestId: request.requestId,
    });
  }
}
