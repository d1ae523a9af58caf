import { describe, expect, it } from 'vitest';
import { ApiError, createLogger } from '@envengine/service-kit';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { EngineObjectStore, KeyHolder, StoreScope } from '../storage/engine-object-store.ts';
import type { PoolCredentialRepository } from './pool-credential.repository.ts';
import { PoolStoreKeys } from './pool-store-keys.ts';

/**
 * The revocation's bookkeeping, with the store, the credentials and the environments as
 * small in-memory stand-ins: the store's own behaviour is tried against SeaweedFS in
 * object-storage.int.test.ts; here, what happens when it is away, and the grant's fence.
 */
function fixture() {
  const live = new Set(['pcr_a', 'pcr_b']);
  const retiredMarks: string[] = [];
  const retireCalls: Array<{ environments: readonly string[]; holders: readonly KeyHolder[] }> = [];
  let storeUp = true;
  const outstanding = ['pcr_c'];
  const store = {
    keysFor: async (_scope: StoreScope, holder: KeyHolder) => ({ accessKeyId: `key-${holder ?? 'engine'}`, secretAccessKey: 's', keyPrefix: 'ten_1/' }),
    retireKeysExcept: async (_tenantId: string, environments: readonly string[], holders: readonly KeyHolder[]) => {
      if (!storeUp) throw new ApiError('unavailable', 'the store did not answer');
      retireCalls.push({ environments, holders });
      return 1;
    },
  } as unknown as EngineObjectStore;
  const credentials = {
    isLive: async (_tenantId: string, id: string) => live.has(id),
    active: async () => [...live].map((id) => ({ _id: id })),
    withStoreKeysOutstanding: async () => outstanding.filter((id) => !live.has(id) && !retiredMarks.includes(id)).map((id) => ({ _id: id, tenant_id: 'ten_1' })),
    markStoreKeysRetired: async (_tenantId: string, id: string) => void retiredMarks.push(id),
  } as unknown as PoolCredentialRepository;
  const environments = { list: async () => [{ id: 'env_1' }, { id: 'env_2' }] } as unknown as EnvironmentRepository;
  const keys = new PoolStoreKeys(store, credentials, environments, createLogger('test', 'silent'));
  return { keys, live, outstanding, retiredMarks, retireCalls, setStoreUp: (up: boolean) => (storeUp = up) };
}

const scope: StoreScope = { tenantId: 'ten_1', environmentId: 'env_1', objectPath: 'p', mode: 'live' };

describe('PoolStoreKeys', () => {
  it('keeps the live holders’ keys on every environment of the tenant, the engine runner’s among them, and marks the revocation done', async () => {
    const { keys, live, retiredMarks, retireCalls } = fixture();
    live.delete('pcr_a');
    expect(await keys.afterRevoke('ten_1', 'pcr_a')).toBe(true);
    expect(retireCalls).toEqual([{ environments: ['env_1', 'env_2'], holders: [null, 'pcr_b'] }]);
    expect(retiredMarks).toEqual(['pcr_a']);
  });

  it('leaves a revocation whose store was away for the sweep, which finishes it once the store answers', async () => {
    const { keys, live, retiredMarks, setStoreUp } = fixture();
    live.delete('pcr_c');
    setStoreUp(false);
    expect(await keys.afterRevoke('ten_1', 'pcr_c')).toBe(false);
    expect(retiredMarks).toEqual([]);
    expect(await keys.retireOutstanding()).toBe(0);
    setStoreUp(true);
    expect(await keys.retireOutstanding()).toBe(1);
    expect(retiredMarks).toEqual(['pcr_c']);
    expect(await keys.retireOutstanding()).toBe(0);
  });

  it('takes one pass over a tenant’s environments for all of its outstanding revocations', async () => {
    const { keys, live, outstanding, retiredMarks, retireCalls } = fixture();
    outstanding.push('pcr_d', 'pcr_e');
    live.delete('pcr_c');
    expect(await keys.retireOutstanding()).toBe(3);
    expect(retireCalls).toHaveLength(1);
    expect(retiredMarks).toEqual(['pcr_c', 'pcr_d', 'pcr_e']);
  });

  it('gives a live credential its own keys, and one revoked while they were made none: they are taken away at once', async () => {
    const { keys, live, retireCalls } = fixture();
    expect((await keys.grant(scope, 'pcr_b')).accessKeyId).toBe('key-pcr_b');
    expect((await keys.grant(scope, null)).accessKeyId).toBe('key-engine');
    expect(retireCalls).toEqual([]);
    live.delete('pcr_b');
    await expect(keys.grant(scope, 'pcr_b')).rejects.toMatchObject({ code: 'unauthorized' });
    expect(retireCalls).toEqual([{ environments: ['env_1', 'env_2'], holders: [null, 'pcr_a'] }]);
  });
});
