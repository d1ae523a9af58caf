/**
 * Headers the gateway sets on every internal request. Internal services trust the
 * tenant header only when the internal credential matches.
 */
export const INTERNAL_HEADERS = {
  credential: 'x-envengine-internal-credential',
  tenantId: 'x-envengine-tenant-id',
  requestId: 'x-request-id',
  /** Who asked, for the events a request causes: the API token's id or `worker:<pool>` (set by the gateway). */
  actor: 'x-envengine-actor',
  /** Set on worker API calls made with a pool token: the pool credential's id. */
  poolCredential: 'x-envengine-pool-credential',
  /** Set when the API token is limited to environments: its patterns, comma-separated (EnvironmentAccess). */
  environments: 'x-envengine-environments',
} as const;
