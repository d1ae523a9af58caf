import type { ApiTokenRepository } from '@envengine/api-tokens';
import { TokenLimitReached } from '@envengine/api-tokens';
import { ROLE_SCOPES, type ApiToken, type ApiTokenCreated, type ApiTokenRevoked, type CreateTokenRequest, type Scope } from '@envengine/contracts';
import type { EventCause } from '@envengine/event-log';
import { ApiError, notFound } from '@envengine/service-kit';
import type { Caller } from '../auth/token-authenticator.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Tenants' own API tokens (`/api/v1/tokens`). A token makes, sees and revokes only tokens
 * within its own grant: no scope it lacks, no environment outside its own, no later
 * expiry. So a CI token limited to `pr-*` can hand a narrower token to a job, and can
 * neither list nor revoke the admin token that made it.
 */
export class TokensService {
  constructor(
    private readonly tokens: ApiTokenRepository,
    /** Tells every gateway to drop a revoked token at once (this one included). */
    private readonly announceRevocation: (tokenHash: string) => Promise<void>,
    private readonly limitPerTenant: number,
    private readonly now: () => number = Date.now,
  ) {}

  async create(caller: Caller, request: CreateTokenRequest, cause: EventCause): Promise<ApiTokenCreated> {
    const scopes: readonly Scope[] = request.role ? ROLE_SCOPES[request.role] : request.scopes!;
    const beyondScopes = scopes.filter((scope) => !caller.scopes.has(scope));
    if (beyondScopes.length > 0) {
      throw new ApiError('insufficient_scope', `This token cannot give ${beyondScopes.join(', ')}: a token makes only tokens within its own scopes.`, {
        details: beyondScopes.map((scope) => ({ path: request.role ? 'role' : 'scopes', message: `requires ${scope}` })),
      });
    }
    const environments = request.environments ? [...new Set(request.environments)] : null;
    if (caller.environments.restricted) {
      const own = caller.environments.patterns!.join(', ');
      if (environments === null) {
        throw new ApiError('insufficient_scope', `This token is limited to ${own}: a token it makes must be limited to those too.`, {
          details: [{ path: 'environments', message: `required, within ${own}` }],
        });
      }
      const beyond = environments.filter((pattern) => !caller.environments.covers(pattern));
      if (beyond.length > 0) {
        throw new ApiError('insufficient_scope', `This token is limited to ${own}, which do not cover ${beyond.join(', ')}.`, {
          details: beyond.map((pattern) => ({ path: 'environments', message: `${pattern} is outside ${own}` })),
        });
      }
    }
    const requested = request.expires_in_days === undefined ? null : this.now() + request.expires_in_days * DAY_MS;
    if (caller.expiresAt !== null && requested !== null && requested > caller.expiresAt) {
      throw new ApiError('insufficient_scope', `A token made by this one cannot outlive it (it expires at ${new Date(caller.expiresAt).toISOString()}).`, {
        details: [{ path: 'expires_in_days', message: `must end by ${new Date(caller.expiresAt).toISOString()}` }],
      });
    }
    // A token that expires makes tokens that expire with it at the latest.
    const expiresAt = requested ?? caller.expiresAt;
    try {
      const { token, record } = await this.tokens.mint(
        caller.tenantId,
        request.name,
        { scopes: [...scopes], environments, expiresAt: expiresAt === null ? null : new Date(expiresAt) },
        caller.tokenId,
        cause,
        this.limitPerTenant,
      );
      return { ...record, token };
    } catch (error) {
      if (!(error instanceof TokenLimitReached)) throw error;
      throw new ApiError('tokens_quota_exceeded', `The tenant holds ${error.limit} live tokens, its limit; revoke one first.`, {
        headers: { 'Retry-After': '3600' },
      });
    }
  }

  async list(caller: Caller): Promise<ApiToken[]> {
    const tokens = await this.tokens.listForTenant(caller.tenantId);
    return tokens.filter((token) => withinGrant(caller, token));
  }

  async revoke(caller: Caller, tokenId: string, cause: EventCause): Promise<ApiTokenRevoked> {
    const token = await this.tokens.findForTenant(caller.tenantId, tokenId);
    // Beyond the caller's own grant is as unknown as another tenant's.
    if (!token || !withinGrant(caller, token)) throw notFound(`Token ${tokenId}`);
    const revoked = await this.tokens.revokeForTenant(caller.tenantId, tokenId, cause);
    if (!revoked) throw notFound(`Token ${tokenId}`);
    await this.announceRevocation(revoked.tokenHash);
    return { id: tokenId, revoked_at: revoked.revokedAt.toISOString() };
  }
}

/** Whether every scope and environment of `token` is the caller's too. */
function withinGrant(caller: Caller, token: ApiToken): boolean {
  if (!token.scopes.every((scope) => caller.scopes.has(scope))) return false;
  if (!caller.environments.restricted) return true;
  return token.environments !== null && token.environments.every((pattern) => caller.environments.covers(pattern));
}

