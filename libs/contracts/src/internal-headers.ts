/**
 * Headers the gateway sets on every internal request. Internal services trust the
 * tenant header only when the internal credential matches.
 */
export const INTERNAL_HEADERS = {
  credential: 'x-envengine-internal-credential',
  tenantId: 'x-envengine-tenant-id',
  requestId: 'x-request-id',
} as const;
