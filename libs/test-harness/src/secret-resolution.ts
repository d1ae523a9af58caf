import { INTERNAL_HEADERS, InternalApi, parseAnswerBody, RESOLVER_CALLER_HEADER, routePath } from '@envengine/contracts';
import type { ApiResponse } from './api-client.ts';
import type { StackInfo } from './test-stack.ts';

export interface ResolveCall {
  tenantId: string;
  body: unknown;
  /** Defaults to the stack's resolver credential. */
  credential?: string;
  /** Defaults to `api-e2e/test`; null sends no caller header. */
  caller?: string | null;
}

/** Calls the secrets-service's internal resolution as the attempt runner does, answering status and body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies of any shape, as ApiClient answers them.
export async function callResolve(stack: StackInfo, call: ResolveCall): Promise<ApiResponse<any>> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    [INTERNAL_HEADERS.credential]: call.credential ?? stack.resolverCredential,
    [INTERNAL_HEADERS.tenantId]: call.tenantId,
  };
  if (call.caller !== null) headers[RESOLVER_CALLER_HEADER] = call.caller ?? 'api-e2e/test';
  const route = InternalApi.resolveBinding;
  // Its body is sent as given (tests send bad ones), so the path alone comes from the table.
  const response = await fetch(`${stack.urls['secrets-service']}${route.base}${routePath(route)}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(call.body),
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const text = new TextDecoder().decode(bytes);
  return { status: response.status, headers: response.headers, body: parseAnswerBody(text), text, bytes };
}
