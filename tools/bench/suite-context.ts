import { INTERNAL_HEADERS, RESOLVER_CALLER_HEADER } from '@envengine/contracts';
import type { RunningStack, StackProfile } from '@envengine/dev-stack';

/** What every suite gets: the running stack and one tenant's token. */
export interface SuiteContext {
  stack: RunningStack;
  profile: StackProfile;
  /** The stack's data directory (its logs, and room for a suite's files). */
  dataDir: string;
  tenantId: string;
  /** The tenant's API token; `auth` is the same as a header. */
  token: string;
  auth: { authorization: string };
}

/** Where and how a worker calls binding resolution: the secrets-service's URL and headers. */
export function resolutionCall({ stack, tenantId }: SuiteContext, caller: string): { url: string; headers: Record<string, string> } {
  return {
    url: `${stack.services.urls['secrets-service']}/internal/v1/bindings/resolve`,
    headers: {
      'content-type': 'application/json',
      [INTERNAL_HEADERS.credential]: stack.services.resolverCredential,
      [INTERNAL_HEADERS.tenantId]: tenantId,
      [RESOLVER_CALLER_HEADER]: caller,
    },
  };
}
