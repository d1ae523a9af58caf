import type { z } from 'zod';
import { errorOfBody, INTERNAL_HEADERS } from '@envengine/contracts';
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

export interface InternalCall {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path from the origin, e.g. `/api/v1/environments/prod`. */
  path: string;
  tenantId: string;
  requestId?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * Calls another service's internal API over keep-alive connections. A domain error of
 * the called service comes back as the same ApiError; an unreachable service as 503.
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

  async call<T extends z.ZodType>(schema: T, call: InternalCall): Promise<z.infer<T>> {
    const headers: Record<string, string> = {
      ...call.headers,
      [INTERNAL_HEADERS.credential]: this.options.credential,
      [INTERNAL_HEADERS.tenantId]: call.tenantId,
    };
    if (call.requestId) headers[INTERNAL_HEADERS.requestId] = call.requestId;
    injectTraceContext(headers);
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    let statusCode: number;
    let text: string;
    try {
      const response = await this.pool.request({
        method: call.method,
        path: call.path,
        headers,
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        idempotent: call.method === 'GET',
      });
      statusCode = response.statusCode;
      text = await response.body.text();
    } catch {
      throw new ApiError('unavailable', `The ${this.options.service} is unreachable; try again shortly.`, {
        headers: { 'Retry-After': '2' },
      });
    }
    const parsed = parseJson(text);
    if (statusCode >= 200 && statusCode < 300) {
      const envelope = parsed as { data?: unknown } | undefined;
      return schema.parse(envelope?.data);
    }
    const error = errorOfBody(parsed);
    if (error) throw new ApiError(error.code, error.message, { details: error.details });
    throw new ApiError('unavailable', `The ${this.options.service} answered ${statusCode}; try again shortly.`);
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
