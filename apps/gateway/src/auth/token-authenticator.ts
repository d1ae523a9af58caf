import { bearerTokenFrom, hashToken, isPoolToken } from '@envengine/api-tokens';
import { unauthorized } from '@envengine/service-kit';

export interface Caller {
  tenantId: string;
  tokenId: string;
  /** Set for a pool token, which opens only the worker API. */
  poolCredentialId?: string;
}

/** An API token (a person or CI) or a pool token (a tenant's worker). */
export type TokenKind = 'api' | 'pool';

export interface TokenLookup {
  findActiveByHash(tokenHash: string, kind: TokenKind): Promise<Caller | undefined>;
}

interface CacheEntry {
  caller: Caller | undefined;
  expiresMs: number;
}

/** A map that forgets its oldest entry when full (Map keeps insertion order). */
class BoundedCache<V> {
  private readonly entries = new Map<string, V>();
  constructor(private readonly maxEntries: number) {}
  get(key: string): V | undefined {
    return this.entries.get(key);
  }
  set(key: string, value: V): void {
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, value);
  }
  delete(key: string): void {
    this.entries.delete(key);
  }
}

/**
 * Resolves a bearer token to its tenant. Lookups are cached for `ttlMs` so that the hot
 * path does not ask the database on every request; a revocation broadcast removes an
 * entry at once, and the TTL bounds how long a missed broadcast can matter. Unknown
 * tokens are cached apart, so a flood of made-up tokens cannot push out the real ones.
 */
export class TokenAuthenticator {
  private readonly known: BoundedCache<CacheEntry>;
  private readonly unknown: BoundedCache<CacheEntry>;

  constructor(
    private readonly tokens: TokenLookup,
    private readonly ttlMs: number,
    maxEntries = 50_000,
    private readonly now: () => number = Date.now,
  ) {
    this.known = new BoundedCache(maxEntries);
    this.unknown = new BoundedCache(Math.max(1, Math.floor(maxEntries / 5)));
  }

  /**
   * @param beforeLookup runs only when the database must be asked (a cache miss); it may
   * throw to refuse the lookup, e.g. when the client's address is over its limit.
   */
  async authenticate(authorization: string | undefined, beforeLookup?: () => void): Promise<Caller> {
    const token = bearerTokenFrom(authorization);
    if (!token) throw unauthorized();
    const tokenHash = hashToken(token);
    const now = this.now();
    const cached = this.known.get(tokenHash) ?? this.unknown.get(tokenHash);
    let caller: Caller | undefined;
    if (cached && cached.expiresMs > now) {
      caller = cached.caller;
    } else {
      beforeLookup?.();
      caller = await this.tokens.findActiveByHash(tokenHash, isPoolToken(token) ? 'pool' : 'api');
      (caller ? this.known : this.unknown).set(tokenHash, { caller, expiresMs: now + this.ttlMs });
    }
    if (!caller) throw unauthorized('The bearer token is unknown or revoked.');
    return caller;
  }

  forget(tokenHash: string): void {
    this.known.delete(tokenHash);
  }
}
