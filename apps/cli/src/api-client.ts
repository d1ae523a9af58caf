import { randomUUID } from 'node:crypto';
import { dataEnvelope, errorOfBody, httpStatusFor, type ErrorCode } from '@envengine/contracts';
import type { z } from 'zod';
import { CliError, ExitCode } from './exit-codes.ts';

export interface ApiClientOptions {
  /** The gateway, e.g. `http://127.0.0.1:8080` (no `/api/v1`). */
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

export interface CallOptions<T extends z.ZodType> {
  /** Schema of `data` in the success envelope. */
  data: T;
  json?: unknown;
  raw?: { bytes: Uint8Array; contentType: string };
  /** Statuses besides 2xx whose body is still `{"data": ...}` (a failed ingest is 422 with its row). */
  dataStatuses?: readonly number[];
  /**
   * POSTs are repeated after a lost connection or a 503 only with an Idempotency-Key, so
   * that a repeat replays the first answer instead of acting twice. True makes one per call.
   */
  idempotent?: boolean;
  timeoutMs?: number;
  /** The Accept header; default application/json. */
  accept?: string;
}

export interface ApiAnswer<T> {
  status: number;
  data: T;
}

/** The exit code for an error code of the API (DESIGN.md §4), from its status. */
export function exitCodeForApiError(code: ErrorCode | undefined, status: number): ExitCode {
  const effective = code ? httpStatusFor(code) : status;
  if (effective === 401) return ExitCode.auth;
  if (effective === 404) return ExitCode.notFound;
  if (effective === 400 || effective === 413 || effective === 422) return ExitCode.usage;
  if (effective === 503 || effective === 502 || effective === 504 || effective >= 500) return ExitCode.unreachable;
  return ExitCode.failed;
}

const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The public API under `/api/v1`, answers parsed with the contracts' schemas. The token
 * goes only into the Authorization header; it is never part of a message this throws.
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

  async call<T extends z.ZodType>(method: string, path: string, options: CallOptions<T>): Promise<ApiAnswer<z.infer<T>>> {
    const response = await this.exchange(method, path, options);
    const text = await response.text();
    const body = parseJson(text);
    if (response.ok || options.dataStatuses?.includes(response.status)) {
      const parsed = dataEnvelope(options.data).safeParse(body);
      if (!parsed.success) {
        throw new CliError(ExitCode.unreachable, 'unexpected_response', `${method} ${this.urlOf(path)} answered ${response.status} with a body envctl does not understand: ${parsed.error.issues[0]?.message ?? ''}`.trim());
      }
      return { status: response.status, data: (parsed.data as { data: z.infer<T> }).data };
    }
    throw this.errorOf(method, path, response.status, body);
  }

  /** A GET of bytes (a materialization's file): the response, its body unread; a refusal throws as `call` does. */
  async download(path: string): Promise<Response> {
    // A large file takes its time: the limit is the whole transfer's, so it is generous.
    const response = await this.exchange('GET', path, { accept: '*/*', timeoutMs: 3_600_000 });
    if (response.ok) return response;
    throw this.errorOf('GET', path, response.status, parseJson(await response.text()));
  }

  /** A HEAD or any call whose body does not matter: the status only (errors other than 404 still throw). */
  async status(method: string, path: string): Promise<number> {
    const response = await this.exchange(method, path, {});
    await response.arrayBuffer();
    if (response.ok || response.status === 404) return response.status;
    throw this.errorOf(method, path, response.status, undefined);
  }

  private urlOf(path: string): string {
    return `${this.options.baseUrl}/api/v1${path}`;
  }

  private errorOf(method: string, path: string, status: number, body: unknown): CliError {
    const error = errorOfBody(body);
    if (error) {
      const { code, message, details } = error;
      return new CliError(exitCodeForApiError(code, status), code, message, details.map((detail) => `${detail.path}: ${detail.message}`));
    }
    const exitCode = exitCodeForApiError(undefined, status);
    const code = status === 401 ? 'unauthorized' : status === 404 ? 'not_found' : 'http_error';
    return new CliError(exitCode, code, `${method} ${this.urlOf(path)} answered ${status}`);
  }

  private async exchange(method: string, path: string, options: Omit<CallOptions<z.ZodType>, 'data'>): Promise<Response> {
    const url = this.urlOf(path);
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.token}`, 'user-agent': this.options.userAgent, accept: options.accept ?? 'application/json' };
    let body: string | Uint8Array | undefined;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.raw) {
      headers['content-type'] = options.raw.contentType;
      body = options.raw.bytes;
    }
    const repeatable = method !== 'POST' || options.idempotent === true;
    if (method === 'POST' && options.idempotent) headers['idempotency-key'] = `envctl-${randomUUID()}`;
    const maxTries = repeatable ? (this.options.maxTries ?? 4) : 1;
    for (let attempt = 1; ; attempt += 1) {
      let response: Response;
      try {
        response = await this.fetchImpl(url, {
          method,
          headers,
          body,
          signal: AbortSignal.timeout(options.timeoutMs ?? this.options.requestTimeoutMs ?? 60_000),
        });
      } catch (error) {
        if (attempt < maxTries) {
          await this.sleep(backoffMs(attempt));
          continue;
        }
        // A network library may quote a header it refused (the token): never repeated.
        const described = describeNetworkError(error);
        const reason = this.options.token === '' ? described : described.split(this.options.token).join('<token>');
        throw new CliError(ExitCode.unreachable, 'unreachable', `cannot reach ${this.options.baseUrl} (${method} ${url}): ${reason}`);
      }
      if (RETRYABLE_STATUSES.has(response.status) && attempt < maxTries) {
        await response.arrayBuffer();
        await this.sleep(retryAfterMs(response.headers.get('retry-after')) ?? backoffMs(attempt));
        continue;
      }
      return response;
    }
  }
}

function backoffMs(attempt: number): number {
  return Math.min(4_000, 250 * 2 ** attempt);
}

function retryAfterMs(header: string | null): number | undefined {
  if (header === null || !/^\d+$/.test(header)) return undefined;
  return Math.min(10_000, Number(header) * 1000);
}

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
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
