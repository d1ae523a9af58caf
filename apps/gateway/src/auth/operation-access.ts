import { ApiError, notFound } from '@envengine/service-kit';
import type { MatchedOperation } from '../proxy/public-routes.ts';
import type { Caller } from './token-authenticator.ts';

/**
 * Whether an API token may call this operation, before anything is forwarded: it must
 * hold the scope the operation declares (403 `insufficient_scope`, naming it); a token
 * limited to environments finds no other environment by name (404, as the service would
 * answer for one that does not exist) and is refused what spans the whole tenant. What a
 * service finds by id (a run, a deployment) or lists, it checks against the forwarded
 * restriction itself.
 */
export function authorizeOperation(caller: Caller, operation: MatchedOperation): void {
  const { endpoint, operationId } = operation;
  if (endpoint.scope === null) return;
  if (!caller.scopes.has(endpoint.scope)) {
    throw new ApiError('insufficient_scope', `${operationId} needs the scope "${endpoint.scope}", which this token does not have.`, {
      details: [{ path: 'scope', message: `requires ${endpoint.scope}` }],
    });
  }
  const access = caller.environments;
  if (!access.restricted) return;
  if (endpoint.tenantWide) {
    throw new ApiError(
      'insufficient_scope',
      `${operationId} spans every environment of the tenant; this token is limited to ${access.patterns!.join(', ')}.`,
      { details: [{ path: 'environments', message: 'requires a token not limited to environments' }] },
    );
  }
  const name = endpoint.path.startsWith('/environments/:name') ? operation.params.name : undefined;
  if (name !== undefined && !access.allows(name)) throw notFound(`Environment "${name}"`);
}
