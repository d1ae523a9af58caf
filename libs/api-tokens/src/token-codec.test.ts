import { describe, expect, it } from 'vitest';
import { bearerTokenFrom, generateToken, hashToken, looksLikeToken } from './token-codec.ts';

describe('token codec', () => {
  it('generates distinct, well-formed tokens', () => {
    const tokens = new Set(Array.from({ length: 100 }, generateToken));
    expect(tokens.size).toBe(100);
    for (const token of tokens) expect(looksLikeToken(token)).toBe(true);
  });

  it('hashes deterministically and never returns the token itself', () => {
    const token = generateToken();
    expect(hashToken(token)).toBe(hashToken(token));
    expect(hashToken(token)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashToken(token)).not.toContain(token.slice(4));
    expect(hashToken(generateToken())).not.toBe(hashToken(token));
  });

  it('reads only a well-formed bearer header', () => {
    const token = generateToken();
    expect(bearerTokenFrom(`Bearer ${token}`)).toBe(token);
    expect(bearerTokenFrom(`bearer ${token}`)).toBe(token);
    expect(bearerTokenFrom(undefined)).toBeUndefined();
    expect(bearerTokenFrom(token)).toBeUndefined();
    expect(bearerTokenFrom(`Basic ${token}`)).toBeUndefined();
    expect(bearerTokenFrom('Bearer not-a-token')).toBeUndefined();
    expect(bearerTokenFrom(`Bearer ${token} extra`)).toBeUndefined();
  });
});
