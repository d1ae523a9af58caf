import { bearerTokenFrom, hashToken, type ApiTokenRepository } from '@envengine/api-tokens';
import { unauthorized } from '@envengine/service-kit';

export interface Caller {
  tenantId: string;
  tokenId: string;
}

interface CacheEntry {
  caller: Caller | undefined;
  expiresMs: number;
}

/**
 * Resolves a bearer token to its tenant. Lookups are cached for `ttlMs` so that the hot
 * path does not ask the database on every request; a revocation broadcast removes an
 * entry at once, and the TTL bounds how long a missed broadcast can matter.
 */
export class TokenAuthenticator {
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    private readonly tokens: Pick<ApiTokenRepository, 'findActiveByHash'>,
    private readonly ttlMs: number,
    private readonly maxEntries = 50_000,
    private readonly now: () => number = Date.now,
  ) {}

  async authenticate(authorization: string | undefined): Promise<Caller> {
    const token = bearerTokenFrom(authorization);
    if (!token) throw unauthorized();
    const tokenHash = hashToken(token);
    const now = this.now();
    const cached = this.cache.get(tokenHash);
    let caller: Caller | undefined;
    if (cached && cached.expiresMs > now) {
      caller = cached.caller;
    } else {
      caller = await this.tokens.findActiveByHash(tokenHash);
      if (this.cache.size >= this.maxEntries) this.cache.clear();
      this.cache.set(tokenHash, { caller, expiresMs: now + this.ttlMs });
    }
    if (!caller) throw unauthorized('The bearer token is unknown or revoked.');
    return caller;
  }

  forget(tokenHash: string): void {
    this.cache.delete(tokenHash);
  }
}
