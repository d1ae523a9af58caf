import { randomUUID } from 'node:crypto';
import {
  errorOfBody,
  httpStatusFor,
  parseAnswerBody,
  requestRouteAnswer,
  routeExchange,
  UnexpectedAnswerError,
  type Endpoint,
  type ErrorBody,
  type ErrorCode,
  type RouteAnswer,
  type RouteExchange,
  type RouteInput,
  type RouteTransport,
} from '@envengine/contracts';
import { retrying, type Backoff } from '@envengine/retry-policy';
import { CliError, ExitCode } from './exit-codes.ts';

export interface ApiClientOptions {
  /** The gateway, e.g. `http://127.0.0.1:8080` (without the API's base, which each route carries). */
  baseUrl: string;
  token: string;
  userAgent: string;
  /** Tries of a call that may be repeated safely, counting the first. Default 4. */
  maxTries?: number;
  /** Timeout of one HTTP exchange. Default 60 s (an ingest waits up to 25 s on the server). */
  requestTimeoutMs?: number;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
}

/** How one call is sent, beyond what its route says. */
export interface CallOptions {
  /**
   * POSTs are repeated after a lost connection or a 503 only with an Idempotency-Key, so
   * that a repeat replays the first answer instead of acting twice. True makes one per call.
   */
  idempotent?: boolean;
  timeoutMs?: number;
  /** The Accept header; default application/json. */
  accept?: string;
}

/** The exit code for an error code of the API (docs/design.md#wire-conventions), from its status. */
export function exitCodeForApiError(code: ErrorCode | undefined, status: number): ExitCode {
  const effective = code ? httpStatusFor(code) : status;
  if (effective === 401 || effective === 403) return ExitCode.auth;
  if (effective === 404) return ExitCode.notFound;
  if (effective === 400 || effective === 413 || effective === 422) return ExitCode.usage;
  if (effective === 503 || effective === 502 || effective === 504 || effective >= 500) return ExitCode.unreachable;
  return ExitCode.failed;
}

const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The public API, each call a route of `PublicApi`: its path built from the route's params,
 * its answer checked against the route's schemas (`requestRoute`). The token goes only
 * into the Authorization header; it is never part of a message this throws.
 */
export class ApiClient {
  private readonly fetchImpl: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: ApiClientOptions) {
    this.fetchImpl = options.fetch ?? fetch;
    this.sleep = options.sleep ?? defaultSleep;
  }

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  /**
   * A route's JSON answer: its status and its `data`, checked against the route (a failed
   * ingest's 422 is an answer too: `PublicApi.createDeployment` declares it). A refusal
   * throws a CliError with the exit code of its error code.
   */
  async request<R extends Endpoint>(route: R, input: RouteInput<R>, options: CallOptions = {}): Promise<RouteAnswer<R>> {
    const transport: RouteTransport = {
      send: async (exchange) => {
        const response = await this.exchange(exchange, options);
        return { status: response.status, body: parseAnswerBody(await response.text()) };
      },
      refused: (exchange, status, error) => this.errorOf(exchange, status, error),
    };
    try {
      return await requestRouteAnswer(transport, route, input);
    } catch (error) {
      if (error instanceof UnexpectedAnswerError) throw new CliError(ExitCode.unreachable, 'unexpected_response', `${this.options.baseUrl}: ${error.message}`);
      throw error;
    }
  }

  /** A route that answers bytes (a materialization's file): the response, its body unread; a refusal throws as `request` does. */
  async download<R extends Endpoint>(route: R, input: RouteInput<R>): Promise<Response> {
    const exchange = routeExchange(route, input);
    // A large file takes its time: the limit is the whole transfer's, so it is generous.
    const response = await this.exchange(exchange, { accept: '*/*', timeoutMs: 3_600_000 });
    if (response.ok) return response;
    throw this.errorOf(exchange, response.status, errorOfAnswer(await response.text()));
  }

  /** A route whose answer has no body (a HEAD): the status only (errors other than 404 still throw). */
  async status<R extends Endpoint>(route: R, input: RouteInput<R>): Promise<number> {
    const exchange = routeExchange(route, input);
    const response = await this.exchange(exchange, {});
    await response.arrayBuffer();
    if (response.ok || response.status === 404) return response.status;
    throw this.errorOf(exchange, response.status, null);
  }

  private urlOf(exchange: RouteExchange): string {
    return `${this.options.baseUrl}${exchange.path}`;
  }

  private errorOf(exchange: RouteExchange, status: number, error: ErrorBody['error'] | null): CliError {
    if (error) {
      const { code, message, details } = error;
      return new CliError(exitCodeForApiError(code, status), code, message, details.map((detail) => `${detail.path}: ${detail.message}`));
    }
    const exitCode = exitCodeForApiError(undefined, status);
    const code = status === 401 ? 'unauthorized' : status === 404 ? 'not_found' : 'http_error';
    return new CliError(exitCode, code, `${exchange.method} ${this.urlOf(exchange)} answered ${status}`);
  }

  private async exchange(exchange: RouteExchange, options: CallOptions): Promise<Response> {
    const { method, body } = exchange;
    const url = this.urlOf(exchange);
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.token}`,
      'user-agent': this.options.userAgent,
      accept: options.accept ?? 'application/json',
      ...exchange.headers,
    };
    const repeatable = method !== 'POST' || options.idempotent === true;
    if (method === 'POST' && options.idempotent) headers['idempotency-key'] = `envctl-${randomUUID()}`;
    try {
      return await retrying(
        () => this.fetchImpl(url, { method, headers, body, signal: AbortSignal.timeout(options.timeoutMs ?? this.options.requestTimeoutMs ?? 60_000) }),
        {
          backoff: CALL_BACKOFF,
          maxTries: repeatable ? (this.options.maxTries ?? 4) : 1,
          retryValue: (response) => RETRYABLE_STATUSES.has(response.status),
          discard: async (response) => void (await response.arrayBuffer()),
          waitOf: (response) => retryAfterMs(response.headers.get('retry-after')),
          sleep: this.sleep,
        },
      );
    } catch (error) {
      // A network library may quote a header it refused (the token): never repeated.
      const described = describeNetworkError(error);
      const reason = this.options.token === '' ? described : described.split(this.options.token).join('<token>');
      throw new CliError(ExitCode.unreachable, 'unreachable', `cannot reach ${this.options.baseUrl} (${method} ${url}): ${reason}`);
    }
  }
}

/** 500 ms, 1 s, 2 s between a call's four tries. */
const CALL_BACKOFF: Backoff = { firstMs: 500, factor: 2, maxMs: 4_000 };

function retryAfterMs(header: string | null): number | undefined {
  if (header === null || !/^\d+$/.test(header)) return undefined;
  return Math.min(10_000, Number(header) * 1000);
}

function errorOfAnswer(text: string): ErrorBody['error'] | null {
  return errorOfBody(parseAnswerBody(text));
}

function describeNetworkError(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError') return 'no answer before the request timed out';
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    if (cause?.code) return `${cause.code}${cause.message && !cause.message.includes(cause.code) ? ` (${cause.message})` : ''}`;
    return cause?.message ?? error.message;
  }
  return String(error);
}
