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
