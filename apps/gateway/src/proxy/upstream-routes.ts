export type Upstream = 'placement' | 'deployment' | 'secrets';

/**
 * Which internal service owns a public path (relative to `/api/v1`). First match wins,
 * so the narrower environment sub-resources come before the environments catch-all.
 */
const ROUTES: ReadonlyArray<readonly [RegExp, Upstream]> = [
  [/^\/environments\/[^/]+\/(?:bindings|secrets)(?:\/|$)/, 'secrets'],
  // A materialization's bytes and rows are read where the engine's storage is reachable.
  [/^\/environments\/[^/]+\/assets\/[^/]+\/materializations\/[^/]+\/(?:data|preview)\/?$/, 'placement'],
  [/^\/environments\/[^/]+\/(?:deployments|assets)(?:\/|$)/, 'deployment'],
  [/^\/(?:deployments|bundles)(?:\/|$)/, 'deployment'],
  [/^\/worker\/bundles(?:\/|$)/, 'deployment'],
  [/^\/(?:environments|placement|runs|pool|worker|quotas|events|webhooks)(?:\/|$)/, 'placement'],
];

export function upstreamFor(path: string): Upstream | undefined {
  for (const [pattern, upstream] of ROUTES) if (pattern.test(path)) return upstream;
  return undefined;
}
