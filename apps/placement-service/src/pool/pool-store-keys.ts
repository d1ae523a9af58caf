import type { Logger } from '@envengine/service-kit';
import { ApiError } from '@envengine/service-kit';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { EngineObjectStore, KeyHolder, StoreScope, TenantStoreKeys } from '../storage/engine-object-store.ts';
import type { PoolCredentialRepository } from './pool-credential.repository.ts';

/** Revoked credentials looked at per sweep. */
const SWEEP_BATCH = 50;

/**
 * A pool credential's keys to the engine's object store. Its workers get keys of their own
 * (`EngineObjectStore.keysFor` with the credential as holder), so revoking the credential
 * takes exactly those away, with any key a holder made for itself; the revoke does it at
 * once, and a sweep retries a revocation whose store was away. A credential revoked while
 * its worker was being given keys does not keep them: the grant checks it is still live
 * after the keys exist, and the revocation lists the keys after it is recorded.
 */
export class PoolStoreKeys {
  constructor(
    readonly store: EngineObjectStore,
    private readonly credentials: PoolCredentialRepository,
    private readonly environments: EnvironmentRepository,
    private readonly log: Logger,
  ) {}

  /** The holder's keys for one environment's objects; a revoked credential gets none. */
  async grant(scope: StoreScope, holder: KeyHolder): Promise<TenantStoreKeys> {
    const keys = await this.store.keysFor(scope, holder);
    if (holder !== null && !(await this.credentials.isLive(scope.tenantId, holder))) {
      await this.retire(scope.tenantId);
      throw new ApiError('unauthorized', 'This pool credential was revoked.');
    }
    return keys;
  }

  /** After a revocation: the tenant's environments keep the keys of its live holders only. False when the store could not be reached (the sweep tries again). */
  afterRevoke(tenantId: string, credentialId: string): Promise<boolean> {
    return this.retireFor(tenantId, [credentialId]);
  }

  /** The sweep: revocations whose store keys are still out, one pass over each tenant's environments for all of its own. */
  async retireOutstanding(): Promise<number> {
    const byTenant = new Map<string, string[]>();
    for (const credential of await this.credentials.withStoreKeysOutstanding(SWEEP_BATCH)) {
      byTenant.set(credential.tenant_id, [...(byTenant.get(credential.tenant_id) ?? []), credential._id]);
    }
    let done = 0;
    for (const [tenantId, credentialIds] of byTenant) if (await this.retireFor(tenantId, credentialIds)) done += credentialIds.length;
    return done;
  }

  private async retireFor(tenantId: string, credentialIds: readonly string[]): Promise<boolean> {
    try {
      await this.retire(tenantId);
      for (const credentialId of credentialIds) await this.credentials.markStoreKeysRetired(tenantId, credentialId);
      return true;
    } catch (error) {
      this.log.warn({ err: (error as Error).message, tenant_id: tenantId, credential_ids: credentialIds }, "could not take revoked pool credentials' store keys away yet; the sweep tries again");
      return false;
    }
  }

  private async retire(tenantId: string): Promise<void> {
    const [environments, live] = await Promise.all([this.environments.list(tenantId), this.credentials.active(tenantId)]);
    const retired = await this.store.retireKeysExcept(tenantId, environments.map((environment) => environment.id), [null, ...live.map((credential) => credential._id)]);
    if (retired > 0) this.log.info({ tenant_id: tenantId, keys: retired }, 'took store keys away from holders no longer live');
  }
}
