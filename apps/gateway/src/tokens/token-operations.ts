import { ApiTokenPathParams, CreateTokenRequest, type OperationId, type PublicApi } from '@envengine/contracts';
import type { EventCause } from '@envengine/event-log';
import { ApiError, parseJsonBody, validateRequestPart } from '@envengine/service-kit';
import type { Caller } from '../auth/token-authenticator.ts';
import type { MatchedOperation } from '../proxy/public-routes.ts';
import type { TokensService } from './tokens.service.ts';

/** The operations the gateway serves itself: those `PublicApi` gives to the `gateway` service. */
export type GatewayOperationId = { [K in OperationId]: PublicApi[K]['service'] extends 'gateway' ? K : never }[OperationId];

export interface GatewayRequest {
  operation: MatchedOperation;
  caller: Caller;
  body: Buffer | undefined;
  contentType: string | undefined;
  cause: EventCause;
}

type Handler = (request: GatewayRequest) => Promise<{ status: number; data: unknown }>;

/**
 * The handlers of the gateway's own operations, validated as the services validate
 * theirs. A `Record` over the gateway's operation ids: one declared and not handled here
 * does not compile.
 */
export function tokenOperations(tokens: TokensService): Record<GatewayOperationId, Handler> {
  return {
    createToken: async ({ caller, body, contentType, cause }) => {
      const parsed = body === undefined ? undefined : parseJsonBody(body, contentType);
      if (parsed === undefined) throw new ApiError('invalid_json', 'A JSON request body is required.');
      const request = validateRequestPart(CreateTokenRequest, parsed, 'body');
      return { status: 201, data: await tokens.create(caller, request, cause) };
    },
    listTokens: async ({ caller }) => ({ status: 200, data: await tokens.list(caller) }),
    revokeToken: async ({ caller, operation, cause }) => {
      const params = validateRequestPart(ApiTokenPathParams, operation.params, 'path');
      return { status: 200, data: await tokens.revoke(caller, params.id, cause) };
    },
  };
}
