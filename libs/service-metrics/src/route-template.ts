/**
 * The words a path of the API may hold that are not values: every other segment (an id, an
 * environment, secret, binding or schedule name, a bundle digest) becomes `:param`, so a
 * route label never carries what a user chose.
 */
const STATIC_SEGMENTS = new Set([
  'api', 'v1', 'internal', 'lifecycle', 'environments', 'placement', 'schedules', 'pause', 'resume', 'next', 'runs', 'cancel', 'logs',
  'deployments', 'activate', 'assets', 'bundles', 'bindings', 'secrets', 'pool', 'credentials', 'revoke', 'tokens', 'worker',
  'attempts', 'start', 'heartbeat', 'finish', 'release', 'storage', 'connections', 'materializations', 'latest', 'resolve',
  'binding-modes', 'active-deployment', 'scheduled-runs', 'ttl-extension', 'expire', 'teardown', 'files', 'run-spec',
  'healthz', 'readyz', 'metrics', 'openapi.json',
]);

/** `/api/v1/environments/prod/runs` → `/api/v1/environments/:param/runs`; query strings dropped. */
export function routeTemplateOf(path: string): string {
  const bare = path.split('?')[0] ?? '/';
  const segments = bare.split('/').filter((segment) => segment !== '');
  if (segments.length > 12) return 'too_long';
  return `/${segments.map((segment) => (STATIC_SEGMENTS.has(segment) ? segment : ':param')).join('/')}`;
}
