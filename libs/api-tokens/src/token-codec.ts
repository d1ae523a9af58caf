import { createHash, randomBytes } from 'node:crypto';
import { API_TOKEN_PREFIX as TOKEN_PREFIX, POOL_TOKEN_PREFIX, TOKEN_PATTERN } from '@envengine/contracts';

/** A new API token: 256 random bits, shown once to its owner and never stored. */
export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/** A pool token: opens only the worker API of its tenant. */
export function generatePoolToken(): string {
  return POOL_TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export function isPoolToken(token: string): boolean {
  return token.startsWith(POOL_TOKEN_PREFIX);
}

export function looksLikeToken(value: string): boolean {
  return TOKEN_PATTERN.test(value);
}

/**
 * What the database keeps. A plain SHA-256 is enough: the token is 256 random bits, so
 * there is nothing to brute-force, and the lookup stays one indexed equality match.
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Reads `Authorization: Bearer <token>`; undefined when absent or malformed. */
export function bearerTokenFrom(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  const token = match?.[1];
  return token && looksLikeToken(token) ? token : undefined;
}
