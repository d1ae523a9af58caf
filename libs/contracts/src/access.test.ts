import { describe, expect, it } from 'vitest';
import { EnvironmentAccess, EnvironmentPattern, ROLE_SCOPES, Role, Scope, roleOf, scopesInOrder } from './access.ts';
import { CreateTokenRequest } from './tokens.ts';

describe('roles', () => {
  it('nest: viewer ⊂ launcher ⊂ deployer ⊂ admin, and admin is every scope', () => {
    const chain = Role.options.map((role) => new Set(ROLE_SCOPES[role]));
    for (let i = 1; i < chain.length; i++) for (const scope of chain[i - 1]!) expect(chain[i]!.has(scope)).toBe(true);
    expect([...chain.at(-1)!].sort()).toEqual([...Scope.options].sort());
    expect(ROLE_SCOPES.viewer.every((scope) => scope.endsWith(':read'))).toBe(true);
  });

  it('names the role of exactly its scopes, and none for another set', () => {
    for (const role of Role.options) expect(roleOf([...ROLE_SCOPES[role]].reverse())).toBe(role);
    expect(roleOf(['runs:read'])).toBeNull();
    expect(scopesInOrder(['tokens:admin', 'environments:read', 'tokens:admin'])).toEqual(['environments:read', 'tokens:admin']);
  });
});

describe('EnvironmentAccess', () => {
  it('allows every environment without a restriction', () => {
    expect(EnvironmentAccess.ALL.allows('prod')).toBe(true);
    expect(EnvironmentAccess.ALL.restricted).toBe(false);
    expect(EnvironmentAccess.ALL.covers('x*')).toBe(true);
  });

  it('matches names exactly and patterns by their beginning', () => {
    const access = new EnvironmentAccess(['pr-*', 'staging']);
    expect(access.allows('pr-7')).toBe(true);
    expect(access.allows('pr-')).toBe(true);
    expect(access.allows('prod')).toBe(false);
    expect(access.allows('staging')).toBe(true);
    expect(access.allows('staging-2')).toBe(false);
    expect(access.allows('PR-7')).toBe(false);
  });

  it('covers a name or a narrower pattern, never a wider one', () => {
    const access = new EnvironmentAccess(['pr-*', 'staging']);
    expect(access.covers('pr-7')).toBe(true);
    expect(access.covers('pr-7*')).toBe(true);
    expect(access.covers('pr-*')).toBe(true);
    expect(access.covers('pr*')).toBe(false);
    expect(access.covers('staging')).toBe(true);
    expect(access.covers('staging*')).toBe(false);
    expect(access.covers('prod')).toBe(false);
  });

  it('round-trips through its header, and a malformed header matches nothing', () => {
    const access = new EnvironmentAccess(['pr-*', 'staging']);
    expect(EnvironmentAccess.fromHeader(access.toHeader()).patterns).toEqual(['pr-*', 'staging']);
    expect(EnvironmentAccess.fromHeader(undefined).restricted).toBe(false);
    const broken = EnvironmentAccess.fromHeader('*,a b');
    expect(broken.restricted).toBe(true);
    expect(broken.allows('prod')).toBe(false);
  });

  it('takes only a trailing "*"', () => {
    for (const good of ['prod', 'pr-*', 'a.b_c-*']) expect(EnvironmentPattern.safeParse(good).success).toBe(true);
    for (const bad of ['*', 'pr-*-x', '*prod', 'a b', '', 'pr-**']) expect(EnvironmentPattern.safeParse(bad).success, bad).toBe(false);
  });
});

describe('CreateTokenRequest', () => {
  it('takes a role or scopes, never both or neither', () => {
    expect(CreateTokenRequest.safeParse({ name: 'ci', role: 'deployer' }).success).toBe(true);
    expect(CreateTokenRequest.safeParse({ name: 'ci', scopes: ['runs:read'] }).success).toBe(true);
    expect(CreateTokenRequest.safeParse({ name: 'ci' }).success).toBe(false);
    expect(CreateTokenRequest.safeParse({ name: 'ci', role: 'viewer', scopes: ['runs:read'] }).success).toBe(false);
    expect(CreateTokenRequest.safeParse({ name: 'ci', scopes: ['secrets:read'] }).success).toBe(false);
    expect(CreateTokenRequest.safeParse({ name: 'ci', role: 'admin', tenant_id: 'x' }).success).toBe(false);
  });
});
