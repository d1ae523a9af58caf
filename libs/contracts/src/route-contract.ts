import { z } from 'zod';
import { errorOfBody, type ErrorBody } from './errors.ts';

export type HttpMethod = 'get' | 'head' | 'post' | 'put' | 'patch' | 'delete';

/** A body that is not the `{data}` JSON envelope: raw tar.gz bytes, or none at all. */
export type RawBody = 'application/gzip' | typeof PARQUET_MEDIA_TYPE | 'empty';

/** A materialization's bytes, as `…/materializations/:id/data` serves them. */
export const PARQUET_MEDIA_TYPE = 'application/vnd.apache.parquet';

/** Where a table's paths are mounted: the public API (through the gateway) or a service's internal one. */
export const PUBLIC_API_BASE = '/api/v1';
export const INTERNAL_API_BASE = '/internal/v1';
export type ApiBase = typeof PUBLIC_API_BASE | typeof INTERNAL_API_BASE;

/**
 * What every route of a table (`PublicApi`, `InternalApi`) declares: the servers mount
 * their handlers from it and the clients build their requests and read their answers
 * from it, so that a renamed path or field breaks the build of both sides.
 */
export interface RouteContract {
  readonly method: HttpMethod;
  readonly base: ApiBase;
  /** Relative to `base`, in Express syntax (`:name`). */
  readonly path: string;
  readonly params?: z.ZodType;
  readonly query?: z.ZodType;
  /** A JSON body, or raw bytes. */
  readonly body?: z.ZodType | RawBody;
  /** An absent body is read as `{}`. */
  readonly bodyOptional?: boolean;
  /** Successful answers by status: the schema of `data`, or a raw body. */
  readonly responses: Readonly<Record<number, z.ZodType | RawBody>>;
}

type SchemaOf<R, K extends string> = R extends { readonly [key in K]: infer S extends z.ZodType } ? S : undefined;

type ParamsInput<R> = SchemaOf<R, 'params'> extends z.ZodType ? { params: z.input<SchemaOf<R, 'params'>> } : { params?: undefined };
type QueryInput<R> = SchemaOf<R, 'query'> extends z.ZodType ? { query?: z.input<SchemaOf<R, 'query'>> } : { query?: undefined };
type BodyInput<R> = R extends { readonly body: infer B }
  ? B extends z.ZodType
    ? R extends { readonly bodyOptional: true }
      ? { body?: z.input<B> }
      : { body: z.input<B> }
    : { body: Uint8Array }
  : { body?: undefined };

/** What a caller gives a route: its path params, query and body, each typed by the route's schema. */
export type RouteInput<R extends RouteContract> = ParamsInput<R> & QueryInput<R> & BodyInput<R> & {
  /** Headers beyond the transport's own (an Idempotency-Key, an attempt's lease). */
  headers?: Readonly<Record<string, string>>;
};

type JsonStatuses<R extends RouteContract> = { [S in keyof R['responses']]: R['responses'][S] extends z.ZodType ? S : never }[keyof R['responses']];

/** The `data` of a route's JSON answers (a union when its statuses answer different shapes). */
export type RouteData<R extends RouteContract> = {
  [S in JsonStatuses<R>]: R['responses'][S] extends z.ZodType ? z.output<R['responses'][S]> : never;
}[JsonStatuses<R>];

/** A route's JSON answer with its status: `data` is typed by the status's schema (`if (answer.status === 201)` narrows it). */
export type RouteAnswer<R extends RouteContract> = {
  [S in JsonStatuses<R>]: { status: S; data: R['responses'][S] extends z.ZodType ? z.output<R['responses'][S]> : never };
}[JsonStatuses<R>];

/** One HTTP exchange a route and its input make: what a transport sends. */
export interface RouteExchange {
  readonly method: Uppercase<HttpMethod>;
  /** From the origin, with the base and the query string: `/api/v1/environments/prod/runs?limit=5`. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
  /** The route's own description, for messages: `GET /api/v1/environments/:name`. */
  readonly describe: string;
}

/** The route's path with its params filled in (each encoded), relative to its base. */
export function routePath(route: RouteContract, params?: Readonly<Record<string, unknown>>): string {
  return route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_match, name: string) => {
    const value = params?.[name];
    // A missing param is the caller's bug; an empty one is sent (the server answers 404), as a user may type `""`.
    if (value === undefined || value === null) throw new TypeError(`${route.method.toUpperCase()} ${route.path}: path param "${name}" is missing`);
    return encodeURIComponent(String(value));
  });
}

function queryString(query: unknown): string {
  if (query === undefined || query === null) return '';
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query as Record<string, unknown>)) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) search.append(key, item instanceof Date ? item.toISOString() : String(item));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** The exchange for a route and its input. */
export function routeExchange<R extends RouteContract>(route: R, input: RouteInput<R>): RouteExchange {
  const path = `${route.base}${routePath(route, input.params as Record<string, unknown> | undefined)}${queryString(input.query)}`;
  const headers: Record<string, string> = { ...input.headers };
  const given: unknown = input.body;
  let body: string | Uint8Array | undefined;
  if (given instanceof Uint8Array) {
    body = given;
    headers['content-type'] = route.body as string;
  } else if (given !== undefined) {
    body = JSON.stringify(given);
    headers['content-type'] = 'application/json';
  }
  return { method: route.method.toUpperCase() as Uppercase<HttpMethod>, path, headers, body, describe: `${route.method.toUpperCase()} ${route.base}${route.path}` };
}

/** An answer that is not the route's: a status it does not declare, or a body its schema refuses. */
export class UnexpectedAnswerError extends Error {
  override readonly name = 'UnexpectedAnswerError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The `data` of a route's answer, checked against the schema of its status. */
export function routeAnswer<R extends RouteContract>(route: R, exchange: RouteExchange, status: number, body: unknown): RouteData<R> {
  const schema = route.responses[status];
  if (schema === undefined || typeof schema === 'string') {
    throw new UnexpectedAnswerError(status, `${exchange.describe} answered ${status}, which the route does not declare as a JSON answer`);
  }
  const parsed = z.object({ data: schema }).safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UnexpectedAnswerError(status, `${exchange.describe} answered ${status} with a body its contract refuses: ${issue ? `${issue.path.join('.')} ${issue.message}` : ''}`.trim());
  }
  return (parsed.data as { data: RouteData<R> }).data;
}

/** How a caller reaches a table's routes: its own connections, credentials and retries, and its own error type. */
export interface RouteTransport {
  /** Sends the exchange; answers the status and the body as parsed JSON (undefined when empty or not JSON). */
  send(exchange: RouteExchange): Promise<{ status: number; body: unknown }>;
  /** The error thrown for a refusal: `error` is the body's error when it has the one error shape. */
  refused(exchange: RouteExchange, status: number, error: ErrorBody['error'] | null, body: unknown): Error;
}

/**
 * The one typed request: builds the route's path from its params, sends its body, and
 * answers the answer's `data` checked against the route's schema, or throws the
 * transport's error for a refusal. Every client of the engine's APIs goes through it.
 */
export async function requestRoute<R extends RouteContract>(transport: RouteTransport, route: R, input: RouteInput<R>): Promise<RouteData<R>> {
  return (await requestRouteAnswer(transport, route, input)).data;
}

/**
 * `requestRoute` for a caller that tells the route's answers apart by status (a PUT's 201
 * from its 200, an ingest's 202 and 422): the status with its `data`.
 */
export async function requestRouteAnswer<R extends RouteContract>(transport: RouteTransport, route: R, input: RouteInput<R>): Promise<RouteAnswer<R>> {
  const exchange = routeExchange(route, input);
  const { status, body } = await transport.send(exchange);
  const success = status >= 200 && status < 300;
  const error = success ? null : errorOfBody(body);
  // A declared status that carries the error shape (a 422 refusal of a route whose 422 is also an answer) is a refusal.
  if (success || (status in route.responses && !error)) {
    return { status, data: routeAnswer(route, exchange, status, body) } as RouteAnswer<R>;
  }
  throw transport.refused(exchange, status, error, body);
}

/** JSON text of an answer's body, parsed; undefined when it is empty or not JSON. */
export function parseAnswerBody(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
