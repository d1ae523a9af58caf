import type { Binding, PutBindingRequest } from '@envengine/contracts';
import { ApiError, notFound } from '@envengine/service-kit';
import type { EnvironmentRef } from '../environments/environment-directory.ts';
import type { SecretRowRepository } from '../secrets/secret-row.repository.ts';
import type { BindingDocument } from './binding.schema.ts';
import type { BindingRepository } from './binding.repository.ts';

export function toBinding(doc: BindingDocument, liveSecrets: ReadonlySet<string>): Binding {
  return {
    name: doc.name,
    config: JSON.parse(doc.config_json) as Record<string, unknown>,
    secret_refs: Object.fromEntries(doc.secret_refs.map((ref) => [ref.setting, ref.secret])),
    mode: doc.mode,
    dangling_secret_refs: doc.secret_refs.filter((ref) => !liveSecrets.has(ref.secret)).map((ref) => ref.setting),
    inserted_at: doc.inserted_at.toISOString(),
    updated_at: doc.updated_at.toISOString(),
  };
}

/** Bindings of an environment: settings and the names of the secrets they use. */
export class BindingsService {
  constructor(
    private readonly bindings: BindingRepository,
    private readonly secrets: SecretRowRepository,
  ) {}

  async list(tenantId: string, environment: EnvironmentRef): Promise<Binding[]> {
    const docs = await this.bindings.list(tenantId, environment.id);
    const referenced = docs.flatMap((doc) => doc.secret_refs.map((ref) => ref.secret));
    const live = new Set((await this.secrets.findByNames(tenantId, environment.id, referenced)).keys());
    return docs.map((doc) => toBinding(doc, live));
  }

  /** Replaces the binding; every secret it names must exist in the environment (422 unknown_secret). */
  async put(
    tenantId: string,
    environment: EnvironmentRef,
    name: string,
    binding: PutBindingRequest,
  ): Promise<{ binding: Binding; created: boolean }> {
    const refs = Object.entries(binding.secret_refs);
    const live = await this.secrets.findByNames(tenantId, environment.id, refs.map(([, secret]) => secret));
    const missing = refs.filter(([, secret]) => !live.has(secret));
    if (missing.length > 0) {
      const names = [...new Set(missing.map(([, secret]) => `"${secret}"`))].join(', ');
      throw new ApiError('unknown_secret', `Environment "${environment.name}" has no secret ${names}; write it before binding it.`, {
        details: missing.map(([setting, secret]) => ({
          path: `secret_refs.${setting}`,
          message: `names secret "${secret}", which environment "${environment.name}" does not have`,
        })),
      });
    }
    const { doc, created } = await this.bindings.replace(tenantId, environment.id, name, binding);
    return { binding: toBinding(doc, new Set(live.keys())), created };
  }

  async delete(tenantId: string, environment: EnvironmentRef, name: string): Promise<void> {
    if (!(await this.bindings.remove(tenantId, environment.id, name))) {
      throw notFound(`Binding "${name}" of environment "${environment.name}"`);
    }
  }
}
