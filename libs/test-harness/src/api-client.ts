/* eslint-disable @typescript-eslint/no-explicit-any -- tests read response bodies of any shape; they validate them with the contract schemas where the shape matters. */
import {
  PUBLIC_API_BASE,
  parseAnswerBody,
  requestRouteAnswer,
  type ErrorBody,
  type RouteAnswer,
  type RouteContract,
  type RouteInput,
  type RouteTransport,
} from '@envengine/contracts';
import { openApiResponseChecker } from './openapi-responses.ts';

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  /** The body as text, for scans and for bodies that are not JSON. */
  text: string;
  /** The body's bytes as sent (a download's file). */
  bytes: Uint8Array;
}

export interface RequestOptions {
  /** Sent as JSON with Content-Type: application/json. */
  json?: unknown;
  /** Sent as is, with the headers given. */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
}

/** A route's refusal, as `ApiClient.call` throws it: the status, the error of the body (if it has the error shape) and the body. */
export class ApiRefusal extends Error {
  override readonly name = 'ApiRefusal';
  constructor(
    readonly describe: string,
    readonly status: number,
    readonly error: ErrorBody['error'] | null,
    readonly body: unknown,
  ) {
    super(`${describe} answered ${status}${error ? ` ${error.code}: ${error.message}` : ''}`);
  }
}

/**
 * A thin HTTP client for tests. `call` sends a route of `PublicApi` (or of an internal
 * table) typed, through `requestRoute`; the raw methods (`request`, `get`, `post`, …) send
 * any request, deliberately bad ones included, never throw on a status, and return status,
 * headers and body.
 * Every answer of the public API (`…/api/v1`) is checked against the OpenAPI document: an
 * undeclared status or a body off its schema throws, so the whole suite checks the document.
 */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string | undefined,
  ) {}

  withToken(token: string | undefined): ApiClient {
    return new ApiClient(this.baseUrl, token);
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (this.token && !('authorization' in headers) && !('Authorization' in headers)) {
      headers.authorization = `Bearer ${this.token}`;
    }
    let body: string | Uint8Array | undefined;
    if (options.json !== undefined) {
      headers['content-type'] ??= 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.raw !== undefined) {
      body = options.raw;
    }
    const response = await fetch(`${this.baseUrl}${path}`, { method, headers, body });
    const bytes = new Uint8Array(await response.arrayBuffer());
    const text = new TextDecoder().decode(bytes);
    if (this.baseUrl.endsWith(PUBLIC_API_BASE)) {
      const problems = openApiResponseChecker().problems(method, path, response.status, response.headers.get('content-type'), text);
      if (problems.length > 0) throw new Error(`The answer does not conform to the OpenAPI document: ${problems.join('; ')}`);
    }
    return { status: response.status, headers: response.headers, body: parseAnswerBody(text) as T, text, bytes };
  }

  /**
   * A route, typed by its contract: the path built from `input.params`, the body checked
   * by the compiler, the answer's `data` checked against the route's schema (and, for the
   * public API, against the OpenAPI document). A refusal throws an `ApiRefusal`.
   * `baseUrl` is either the route's base (`…/api/v1`) or the origin it is under.
   */
  async call<R extends RouteContract>(route: R, input: RouteInput<R>): Promise<RouteAnswer<R>> {
    const transport: RouteTransport = {
      send: async (exchange) => {
        // The raw request adds the base when this client's URL holds it.
        const path = this.baseUrl.endsWith(route.base) ? exchange.path.slice(route.base.length) : exchange.path;
        const answer = await this.request(exchange.method, path, { raw: exchange.body, headers: { ...exchange.headers } });
        return { status: answer.status, body: answer.body };
      },
      refused: (exchange, status, error, body) => new ApiRefusal(exchange.describe, status, error, body),
    };
    return requestRouteAnswer(transport, route, input);
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, options);
  }

  post<T = any>(path: string, json?: unknown, options: RequestOptions = {}) {
    return this.request<T>('POST', path, json === undefined ? options : { ...options, json });
  }

  put<T = any>(path: string, json?: unknown, options: RequestOptions = {}) {
    return this.request<T>('PUT', path, json === undefined ? options : { ...options, json });
  }

  patch<T = any>(path: string, json?: unknown, options: RequestOptions = {}) {
    return this.request<T>('PATCH', path, { ...options, json });
  }

  delete<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('DELETE', path, options);
  }
}
