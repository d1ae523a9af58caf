import {
  INTERNAL_HEADERS,
  parseAnswerBody,
  QUOTA_RULES,
  requestRoute,
  type RouteContract,
  type RouteData,
  type RouteInput,
  type RouteTransport,
} from '@envengine/contracts';
import { ApiError } from '@envengine/service-kit';
import { injectTraceContext } from '@envengine/tracing';
import { ReplicaPools } from '@envengine/replica-pools';

export interface InternalHttpClientOptions {
  /** Name of the service called, for error messages. */
  service: string;
  /** The service's replicas, e.g. `['http://127.0.0.1:8081']`; calls take them in turn. */
  origins: readonly string[];
  /** The credential the called service expects in `x-envengine-internal-credential`. */
  credential: string;
  timeoutMs?: number;
  connections?: number;
}

/** Who a call is made for: the tenant the called service acts on, and the request it serves. */
export interface InternalCaller {
  tenantId: string;
  requestId?: string;
}

/**
 * Calls another service's routes (`InternalApi`'s, or a `PublicApi` route the service
 * serves the engine directly) over keep-alive connections. A domain error of the called
 * service comes back as the same ApiError; an unreachable service as 503.
 */
export class InternalHttpClient {
  private readonly pool: ReplicaPools;

  constructor(private readonly options: InternalHttpClientOptions) {
    this.pool = new ReplicaPools(options.origins, {
      connections: options.connections ?? 32,
      keepAliveTimeout: 30_000,
      headersTimeout: options.timeoutMs ?? 10_000,
      bodyTimeout: options.timeoutMs ?? 10_000,
    });
  }

  /** The route's answer's `data`, checked against its contract. */
  request<R extends RouteContract>(route: R, input: RouteInput<R> & InternalCaller): Promise<RouteData<R>> {
    return requestRoute(this.transport(input), route, input);
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private transport(caller: InternalCaller): RouteTransport {
    return {
      send: async (exchange) => {
        const headers: Record<string, string> = {
          ...exchange.headers,
          [INTERNAL_HEADERS.credential]: this.options.credential,
          [INTERNAL_HEADERS.tenantId]: caller.tenantId,
        };
        if (caller.requestId) headers[INTERNAL_HEADERS.requestId] = caller.requestId;
        injectTraceContext(headers);
        try {
          const response = await this.pool.request({
            method: exchange.method,
            path: exchange.path,
            headers,
            body: exchange.body,
            idempotent: exchange.method === 'GET',
          });
          return { status: response.statusCode, body: parseAnswerBody(await response.body.text()) };
        } catch {
          throw new ApiError('unavailable', `The ${this.options.service} is unreachable; try again shortly.`, {
            headers: { 'Retry-After': '2' },
          });
        }
      },
      refused: (_exchange, status, error) =>
        error
          ? new ApiError(error.code, error.message, { details: error.details, ...quotaRetryAfter(error.code) })
          : new ApiError('unavailable', `The ${this.options.service} answered ${status}; try again shortly.`),
    };
  }
}

/** A quota's refusal passed on keeps its `Retry-After` (the answer's headers are not carried over, the rule's is the same). */
function quotaRetryAfter(code: string): { headers?: Record<string, string> } {
  const rule = Object.values(QUOTA_RULES).find((quota) => quota.errorCode === code);
  return rule ? { headers: { 'Retry-After': String(rule.retryAfterSeconds) } } : {};
}
