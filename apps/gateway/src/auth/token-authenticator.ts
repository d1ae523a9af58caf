import { bearerTokenFrom, hashToken, isPoolToken } from '@envengine/api-tokens';
import type { EnvironmentAccess, Scope } from '@envengine/contracts';
import { ApiError, TtlCache, unauthorized } from '@envengine/service-kit';

export interface Caller {
  tenantId: string;
  tokenId: string;
  /** Set for a pool token, which opens only the worker API. */
  poolCredentialId?: string;
  /** What an API token may do; empty for a pool token. */
  scopes: ReadonlySet<Scope>;
  /** The environments an API token may see (every one for a pool token: its routes name none). */
  environments: EnvironmentAccess;
  /** Epoch milliseconds after which the token is refused (`token_expired`); null for never. */
  expiresAt: number | null;
}

/** An API token (a person or CI) or a pool token (a tenant's worker). */
export type TokenKind = 'api' | 'pool';

export interface TokenLookup {
  findActiveByHash(tokenHash: string, kind: TokenKind): Promise<Caller | undefined>;
}

/**
 * Resolves a bearer token to its tenant and grant. Lookups are cached for `ttlMs` so that
 * the hot path does not ask the database on every request; a revocation broadcast removes
 * an entry at once, and the TTL bounds how long a missed broadcast can matter. Unknown
 * tokens are cached apart, so a flood of made-up tokens cannot push out the real ones. An
 * expiry is checked on every request, cached or not.
 */
export class TokenAuthenticator {
  private readonly known: TtlCache<Caller | undefined>;
  private readonly unknown: TtlCache<true>;

  constructor(
    private readonly tokens: TokenLookup,
    ttlMs: number,
    maxEntries = 50_000,
    private readonly now: () => number = Date.now,
  ) {
    this.known = new TtlCache({ ttlMs, maxEntries, now });
    this.unknown = new TtlCache({ ttlMs, maxEntries: Math.max(1, Math.floor(maxEntries / 5)), now });
  }

  /**
   * @param beforeLookup runs only when the database must be asked (a cache miss); it may
   * throw to refuse the lookup, e.g. when the client's address is over its limit.
   */
  async authenticate(authorization: string | undefined, beforeLookup?: () => void): Promise<Caller> {
    const token = bearerTokenFrom(authorization);
    if (!token) throw unauthorized();
    const tokenHash = hashToken(token);
    const caller = this.unknown.peek(tokenHash)
      ? undefined
      : await this.known.get(tokenHash, async () => {
          beforeLookup?.();
          const found = await this.tokens.findActiveByHash(tokenHash, isPoolToken(token) ? 'pool' : 'api');
          if (!found) this.unknown.set(tokenHash, true);
          return found;
        });
    if (!caller) throw unauthorized('The bearer token is unknown or revoked.');
    if (caller.expiresAt !== null && this.now() >= caller.expiresAt) {
      throw new ApiError('token_expired', `The bearer token expired at ${new Date(caller.expiresAt).toISOString()}.`, {
        headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' },
      });
    }
    return caller;
  }

  forget(tokenHash: string): void {
    this.known.delete(tokenHash);
  }
}
