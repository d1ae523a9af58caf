import { z } from 'zod';
import { EnvironmentPattern, Role, Scope } from './access.ts';

/** An API token's prefix (it opens the public API of its tenant). */
export const API_TOKEN_PREFIX = 'eek_';
/** A pool token's prefix (a worker's credential): it looks different, so the gateway knows where to look one up. */
export const POOL_TOKEN_PREFIX = 'eew_';
/** Either kind: the prefix and 32 random bytes, base64url. */
export const TOKEN_PATTERN = /^ee[kw]_[A-Za-z0-9_-]{43}$/;

/**
 * The distinct API tokens written anywhere in `text` (the admin command's whole output, a
 * file with a comment): what `envctl login` reads, so that a person may pipe in what they
 * were given without cutting it first.
 */
export function apiTokensIn(text: string): string[] {
  return [...new Set(text.match(/(?<![A-Za-z0-9_-])eek_[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g) ?? [])];
}

/** `POST /api/v1/tokens`: a role or a list of scopes, never both; optionally limited to environments and an expiry. */
export const CreateTokenRequest = z
  .strictObject({
    name: z.string().min(1).max(100),
    role: Role.optional(),
    scopes: z.array(Scope).min(1).max(Scope.options.length).optional(),
    /** Names and `prefix*` patterns; absent for every environment of the tenant. */
    environments: z.array(EnvironmentPattern).min(1).max(50).optional(),
    expires_in_days: z.number().int().min(1).max(3650).optional(),
  })
  .refine((request) => (request.role === undefined) !== (request.scopes === undefined), {
    message: 'give either a role or a list of scopes',
    path: ['role'],
  })
  // The refinement, as the OpenAPI document states it.
  .meta({ description: 'Either `role` or `scopes` (exactly one).', oneOf: [{ required: ['role'] }, { required: ['scopes'] }] });
export type CreateTokenRequest = z.infer<typeof CreateTokenRequest>;

/** An API token as `GET /api/v1/tokens` lists it: never the token or its hash. */
export const ApiToken = z.object({
  id: z.string(),
  name: z.string(),
  /** The role whose scopes these are exactly, or null. */
  role: Role.nullable(),
  scopes: z.array(Scope),
  /** The environments it is limited to, or null for every one of the tenant. */
  environments: z.array(z.string()).nullable(),
  created_at: z.iso.datetime(),
  /** The token that made it, or null for the operator's admin command. */
  created_by: z.string().nullable(),
  /** When a gateway last let it in (kept to within a minute), or null. */
  last_used_at: z.iso.datetime().nullable(),
  expires_at: z.iso.datetime().nullable(),
});
export type ApiToken = z.infer<typeof ApiToken>;

/** `POST /api/v1/tokens`: the token itself, shown once. */
export const ApiTokenCreated = ApiToken.extend({ token: z.string() });
export type ApiTokenCreated = z.infer<typeof ApiTokenCreated>;

// Any id is looked up: one that is malformed is as unknown as a missing one (404, docs/design.md#wire-conventions).
export const ApiTokenPathParams = z.object({ id: z.string().min(1).max(100) });

export const ApiTokenRevoked = z.object({ id: z.string(), revoked_at: z.iso.datetime() });
export type ApiTokenRevoked = z.infer<typeof ApiTokenRevoked>;
