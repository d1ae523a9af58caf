import { describe, expect, it } from 'vitest';
import { generateToken, hashToken } from '@envengine/api-tokens';
import { ApiError } from '@envengine/service-kit';
import { EnvironmentAccess } from '@envengine/contracts';
import { TokenAuthenticator, type Caller } from './token-authenticator.ts';

function repositoryWith(known: Map<string, Caller>) {
  let lookups = 0;
  return {
    get lookups() {
      return lookups;
    },
    findActiveByHash: async (hash: string) => {
      lookups += 1;
      return known.get(hash);
    },
  };
}

describe('TokenAuthenticator', () => {
  const token = generateToken();
  const caller: Caller = { tokenId: 'tok_1', tenantId: 'ten_1', scopes: new Set(['runs:read']), environments: EnvironmentAccess.ALL, expiresAt: null };

  it('answers a known token from cache until the TTL passes', async () => {
    let now = 0;
    const repo = repositoryWith(new Map([[hashToken(token), caller]]));
    const auth = new TokenAuthenticator(repo, 1000, 10, () => now);
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toEqual(caller);
    await auth.authenticate(`Bearer ${token}`);
    expect(repo.lookups).toBe(1);
    now = 1001;
    await auth.authenticate(`Bearer ${token}`);
    expect(repo.lookups).toBe(2);
  });

  it('refuses missing, malformed and unknown tokens with 401 and WWW-Authenticate', async () => {
    const auth = new TokenAuthenticator(repositoryWith(new Map()), 1000);
    for (const header of [undefined, 'Bearer', `Basic ${token}`, `Bearer ${token}`]) {
      const error = await auth.authenticate(header).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).code).toBe('unauthorized');
      expect((error as ApiError).headers['WWW-Authenticate']).toBe('Bearer');
    }
  });

  it('keeps known tokens cached while unknown ones flood in', async () => {
    const repo = repositoryWith(new Map([[hashToken(token), caller]]));
    const auth = new TokenAuthenticator(repo, 60_000, 10);
    await auth.authenticate(`Bearer ${token}`);
    for (let i = 0; i < 50; i += 1) await auth.authenticate(`Bearer ${generateToken()}`).catch(() => undefined);
    const lookups = repo.lookups;
    await auth.authenticate(`Bearer ${token}`);
    expect(repo.lookups).toBe(lookups);
  });

  it('asks before a database lookup only, so cached tokens are never refused', async () => {
    const repo = repositoryWith(new Map([[hashToken(token), caller]]));
    const auth = new TokenAuthenticator(repo, 60_000);
    await auth.authenticate(`Bearer ${token}`);
    const refuse = () => {
      throw new Error('over the limit');
    };
    await expect(auth.authenticate(`Bearer ${token}`, refuse)).resolves.toEqual(caller);
    await expect(auth.authenticate(`Bearer ${generateToken()}`, refuse)).rejects.toThrow('over the limit');
    expect(repo.lookups).toBe(1);
  });

  it('drops a revoked token from the cache at once', async () => {
    const known = new Map([[hashToken(token), caller]]);
    const auth = new TokenAuthenticator(repositoryWith(known), 60_000);
    await auth.authenticate(`Bearer ${token}`);
    known.delete(hashToken(token));
    auth.forget(hashToken(token));
    await expect(auth.authenticate(`Bearer ${token}`)).rejects.toMatchObject({ code: 'unauthorized' });
  });

  it('refuses an expired token with token_expired, from the cache too, and never before its expiry', async () => {
    let now = 1_000;
    const expiring: Caller = { ...caller, expiresAt: 2_000 };
    const repo = repositoryWith(new Map([[hashToken(token), expiring]]));
    const auth = new TokenAuthenticator(repo, 60_000, 10, () => now);
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toEqual(expiring);
    now = 1_999;
    await expect(auth.authenticate(`Bearer ${token}`)).resolves.toEqual(expiring);
    now = 2_000;
    await expect(auth.authenticate(`Bearer ${token}`)).rejects.toMatchObject({ code: 'token_expired' });
    expect(repo.lookups).toBe(1);
  });
});
