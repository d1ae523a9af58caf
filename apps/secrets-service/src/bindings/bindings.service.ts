import type { Connection } from 'mongoose';
import type { Binding, PutBindingRequest } from '@envengine/contracts';
import type { EventCause, EventOutbox } from '@envengine/event-log';
import { ApiError, isDuplicateKeyError, notFound } from '@envengine/service-kit';
import { inTransaction } from '@envengine/tenant-data';
import type { EnvironmentRef } from '../environments/environment-directory.ts';
import type { SecretRowRepository } from '../secrets/secret-row.repository.ts';
import type { BindingDocument } from './binding.schema.ts';
import type { BindingRepository } from './binding.repository.ts';

export function toBinding(doc: BindingDocument, liveSecrets: ReadonlySet<string>, inheritedFrom: string | null = null): Binding {
  return {
    name: doc.name,
    config: JSON.parse(doc.config_json) as Record<string, unknown>,
    secret_refs: Object.fromEntries(doc.secret_refs.map((ref) => [ref.setting, ref.secret])),
    mode: doc.mode,
    dangling_secret_refs: doc.secret_refs.filter((ref) => !liveSecrets.has(ref.secret)).map((ref) => ref.setting),
    inherited_from: inheritedFrom,
    inserted_at: doc.inserted_at.toISOString(),
    updated_at: doc.updated_at.toISOString(),
  };
}

/**
 * Bindings of an environment: settings and the names of the secrets they use. Each change
 * is one transaction with its event.
 */
export class BindingsService {
  constructor(
    private readonly connection: Connection,
    private readonly bindings: BindingRepository,
    private readonly secrets: SecretRowRepository,
    private readonly outbox: EventOutbox,
  ) {}

  /**
   * The environment's bindings; a preview's listing adds its parent's that it does not set
   * itself (`inherited_from`). A secret a binding names is live when the environment has it,
   * or (in a preview) its parent does: resolution looks in that order.
   */
  async list(tenantId: string, environment: EnvironmentRef): Promise<Binding[]> {
    const parent = environment.parent ?? null;
    const [own, parents] = await Promise.all([this.bindings.list(tenantId, environment.id), parent ? this.bindings.list(tenantId, parent.id) : Promise.resolve([])]);
    const names = new Set(own.map((doc) => doc.name));
    const inherited = parents.filter((doc) => !names.has(doc.name));
    const referenced = [...own, ...inherited].flatMap((doc) => doc.secret_refs.map((ref) => ref.secret));
    const live = await this.liveSecretNames(tenantId, environment, referenced);
    const listed = [...own.map((doc) => toBinding(doc, live)), ...inherited.map((doc) => toBinding(doc, live, parent!.name))];
    return listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Which of `names` the environment has, or (a preview) its parent has. */
  private async liveSecretNames(tenantId: string, environment: EnvironmentRef, names: string[]): Promise<Set<string>> {
    const [own, parents] = await Promise.all([
      this.secrets.findByNames(tenantId, environment.id, names),
      environment.parent ? this.secrets.findByNames(tenantId, environment.parent.id, names) : Promise.resolve(new Map()),
    ]);
    return new Set([...own.keys(), ...parents.keys()]);
  }

  /** Replaces the binding; every secret it names must exist in the environment (422 unknown_secret). */
  async put(
    tenantId: string,
    environment: EnvironmentRef,
    name: string,
    binding: PutBindingRequest,
    cause: EventCause,
  ): Promise<{ binding: Binding; created: boolean }> {
    const refs = Object.entries(binding.secret_refs);
    // A preview's binding may name its parent's secrets (resolved the preview's first).
    const live = await this.liveSecretNames(tenantId, environment, refs.map(([, secret]) => secret));
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
    for (let attempt = 1; ; attempt += 1) {
      try {
        const { doc, created } = await inTransaction(this.connection, async (session) => {
          const replaced = await this.bindings.replace(tenantId, environment.id, name, binding, session);
          await this.outbox.record(
            tenantId,
            { type: 'binding.set', environment, subject: { kind: 'binding', id: name }, cause, data: { mode: binding.mode, created: replaced.created } },
            session,
          );
          return replaced;
        });
        return { binding: toBinding(doc, live), created };
      } catch (error) {
        // Two first PUTs at once: one insert wins, the other runs again and replaces what it inserted.
        if (!isDuplicateKeyError(error) || attempt >= 3) throw error;
      }
    }
  }

  async delete(tenantId: string, environment: EnvironmentRef, name: string, cause: EventCause): Promise<void> {
    const removed = await inTransaction(this.connection, async (session) => {
      if (!(await this.bindings.remove(tenantId, environment.id, name, session))) return false;
      await this.outbox.record(tenantId, { type: 'binding.deleted', environment, subject: { kind: 'binding', id: name }, cause, data: {} }, session);
      return true;
    });
    if (!removed) throw notFound(`Binding "${name}" of environment "${environment.name}"`);
  }
}
