import { z } from 'zod';
import { RESOURCE_NAME_PATTERN } from './names.ts';

/**
 * What an API token may do (docs/design.md#tokens). Each operation of `PublicApi` names
 * the one scope it needs; the gateway checks it before forwarding. No scope reads a
 * secret's value: nothing does.
 */
export const Scope = z.enum([
  'environments:read',
  'environments:write',
  'deployments:write',
  'runs:read',
  'runs:write',
  'secrets:write',
  'bindings:write',
  'schedules:write',
  'pool:admin',
  'events:read',
  /** A scope of its own (docs/design.md#tokens): a webhook sends events out of the engine, which a read scope must not set up. */
  'webhooks:write',
  'tokens:admin',
]);
export type Scope = z.infer<typeof Scope>;

const VIEWER: readonly Scope[] = ['environments:read', 'runs:read', 'events:read'];
const LAUNCHER: readonly Scope[] = [...VIEWER, 'runs:write'];
const DEPLOYER: readonly Scope[] = [...LAUNCHER, 'deployments:write', 'schedules:write'];

/** Named sets of scopes. */
export const ROLE_SCOPES = {
  viewer: VIEWER,
  launcher: LAUNCHER,
  deployer: DEPLOYER,
  admin: Scope.options,
} as const satisfies Record<string, readonly Scope[]>;

export const Role = z.enum(['viewer', 'launcher', 'deployer', 'admin']);
export type Role = z.infer<typeof Role>;

/** The scopes in the order `Scope` lists them, each once. */
export function scopesInOrder(scopes: Iterable<Scope>): Scope[] {
  const wanted = new Set(scopes);
  return Scope.options.filter((scope) => wanted.has(scope));
}

/** The role whose scopes are exactly these, or null. */
export function roleOf(scopes: readonly Scope[]): Role | null {
  const wanted = new Set(scopes);
  for (const role of Role.options) {
    const own = ROLE_SCOPES[role];
    if (own.length === wanted.size && own.every((scope) => wanted.has(scope))) return role;
  }
  return null;
}

/**
 * An environment a token is limited to: a name (`prod`), or a name's beginning followed by
 * `*` (`pr-*`). Only a trailing `*`, so that whether one pattern covers another is a
 * prefix test, and a Mongo filter is an anchored prefix that uses the index.
 */
export const ENVIRONMENT_PATTERN_PATTERN = new RegExp(`${RESOURCE_NAME_PATTERN.source.slice(0, -1)}\\*?$`);

export const EnvironmentPattern = z.string().regex(ENVIRONMENT_PATTERN_PATTERN, {
  message: 'must be an environment name, or the beginning of one followed by "*" (e.g. "pr-*")',
});

/** The environments a caller may see: every one of its tenant's, or those its patterns match. */
export class EnvironmentAccess {
  /** No restriction: a token of the whole tenant, or the engine's own call. */
  static readonly ALL = new EnvironmentAccess(null);

  private readonly names: ReadonlySet<string>;
  private readonly prefixes: readonly string[];

  /** `patterns`: null for no restriction. */
  constructor(readonly patterns: readonly string[] | null) {
    const list = patterns ?? [];
    this.names = new Set(list.filter((pattern) => !pattern.endsWith('*')));
    this.prefixes = list.filter((pattern) => pattern.endsWith('*')).map((pattern) => pattern.slice(0, -1));
  }

  get restricted(): boolean {
    return this.patterns !== null;
  }

  /** Whether the environment of this name exists for the caller. */
  allows(name: string): boolean {
    if (this.patterns === null) return true;
    return this.names.has(name) || this.prefixes.some((prefix) => name.startsWith(prefix));
  }

  /** Whether every environment `pattern` matches is one of these (a name, or a longer prefix). */
  covers(pattern: string): boolean {
    if (this.patterns === null) return true;
    if (!pattern.endsWith('*')) return this.allows(pattern);
    const prefix = pattern.slice(0, -1);
    return this.prefixes.some((own) => prefix.startsWith(own));
  }

  /** The literal names and the prefixes, for a store's filter. */
  get filter(): { names: string[]; prefixes: string[] } {
    return { names: [...this.names], prefixes: [...this.prefixes] };
  }

  /** As the gateway forwards it to the services (INTERNAL_HEADERS.environments): the patterns, comma-separated. */
  toHeader(): string | undefined {
    return this.patterns === null ? undefined : this.patterns.join(',');
  }

  /** From that header; a malformed one gives a restriction that matches nothing, never none. */
  static fromHeader(value: string | undefined): EnvironmentAccess {
    if (value === undefined) return EnvironmentAccess.ALL;
    const patterns = value.split(',').filter((pattern) => ENVIRONMENT_PATTERN_PATTERN.test(pattern));
    return new EnvironmentAccess(patterns);
  }
}
