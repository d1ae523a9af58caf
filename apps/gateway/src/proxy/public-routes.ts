import { PublicApi, type Endpoint, type OperationId } from '@envengine/contracts';
import { routeTemplateOf } from '@envengine/service-metrics';
import type { Request } from 'express';

/** One operation of the public API as the gateway matches a request to it. */
interface PublicRoute {
  operationId: OperationId;
  endpoint: Endpoint;
  method: string;
  pattern: RegExp;
  /** The names of its path params, in the order the pattern captures them. */
  paramNames: string[];
  /** The metrics label: `/api/v1/environments/:param`. */
  label: string;
}

/** An operation a request is for, with its path params as sent (decoded). */
export interface MatchedOperation {
  operationId: OperationId;
  endpoint: Endpoint;
  params: Record<string, string>;
}

/** A path template (`/environments/:name/runs`) as a pattern of whole segments under `/api/v1`, each param captured. */
function patternOf(template: string): RegExp {
  const segments = template.split('/').map((segment) => (segment.startsWith(':') ? '([^/]+)' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^/api/v1${segments.join('/')}/?$`);
}

const ROUTES: readonly PublicRoute[] = (Object.entries(PublicApi) as [OperationId, Endpoint][]).map(([operationId, endpoint]) => ({
  operationId,
  endpoint,
  method: endpoint.method.toUpperCase(),
  pattern: patternOf(endpoint.path),
  paramNames: endpoint.path.split('/').filter((segment) => segment.startsWith(':')).map((segment) => segment.slice(1)),
  label: routeTemplateOf(`/api/v1${endpoint.path}`),
}));

/**
 * Whether an operation's request or answer is a file streamed through (a bundle's upload
 * and download, a materialization's download): the routes of the stream pool.
 */
export function streamsBodies(endpoint: Endpoint): boolean {
  const raw = (body: unknown) => typeof body === 'string' && body !== 'empty';
  return raw(endpoint.body) || Object.values(endpoint.responses).some(raw);
}

/** HEAD is GET without the body. */
const asDeclared = (method: string) => (method === 'HEAD' ? 'GET' : method);

/**
 * The operation of the public API a request is for, as a metrics label; undefined when it
 * is none (a made-up path or method), which the metrics count under one `unmatched` label.
 */
export function publicRouteOf(req: Pick<Request, 'method' | 'originalUrl'>): string | undefined {
  const path = req.originalUrl.split('?', 1)[0]!;
  const method = asDeclared(req.method);
  return ROUTES.find((route) => route.method === method && route.pattern.test(path))?.label;
}

/**
 * The operation a request (its method, and its path under `/api/v1`) is for: which
 * service serves it, the scope it needs, and its path params; undefined for none. A HEAD
 * is the GET of its path unless the path declares a HEAD of its own.
 */
export function operationOf(method: string, path: string): MatchedOperation | undefined {
  const full = `/api/v1${path}`;
  const wanted = method.toUpperCase();
  const route =
    ROUTES.find((candidate) => candidate.method === wanted && candidate.pattern.test(full)) ??
    (wanted === 'HEAD' ? ROUTES.find((candidate) => candidate.method === 'GET' && candidate.pattern.test(full)) : undefined);
  if (!route) return undefined;
  const captured = route.pattern.exec(full)!.slice(1);
  const params: Record<string, string> = {};
  route.paramNames.forEach((name, index) => {
    params[name] = decodeSegment(captured[index]!);
  });
  return { operationId: route.operationId, endpoint: route.endpoint, params };
}

/** A path segment as the services read it (express decodes params); a malformed escape stays as sent. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The methods the public API declares for a path under `/api/v1` (HEAD wherever GET is:
 * it is GET without the body); empty for a path it does not have. A declared path asked
 * with another method is answered 405 with these in `Allow`.
 */
export function methodsAllowedOn(path: string): string[] {
  const declared = new Set(ROUTES.filter((route) => route.pattern.test(`/api/v1${path}`)).map((route) => route.method));
  if (declared.has('GET')) declared.add('HEAD');
  return [...declared].sort();
}
