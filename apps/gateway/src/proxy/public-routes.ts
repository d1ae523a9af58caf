import { PublicApi } from '@envengine/contracts';
import { routeTemplateOf } from '@envengine/service-metrics';
import type { Request } from 'express';

/** One operation of the public API as the gateway matches a request to it. */
interface PublicRoute {
  method: string;
  pattern: RegExp;
  /** The metrics label: `/api/v1/environments/:param`. */
  label: string;
}

/** A path template (`/environments/:name/runs`) as a pattern of whole segments under `/api/v1`. */
function patternOf(template: string): RegExp {
  const segments = template.split('/').map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^/api/v1${segments.join('/')}/?$`);
}

const ROUTES: readonly PublicRoute[] = Object.values(PublicApi).map((endpoint) => ({
  method: endpoint.method.toUpperCase(),
  pattern: patternOf(endpoint.path),
  label: routeTemplateOf(`/api/v1${endpoint.path}`),
}));

/**
 * The operation of the public API a request is for, as a metrics label; undefined when it
 * is none (a made-up path or method), which the metrics count under one `unmatched` label.
 */
export function publicRouteOf(req: Pick<Request, 'method' | 'originalUrl'>): string | undefined {
  const path = req.originalUrl.split('?', 1)[0]!;
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  return ROUTES.find((route) => route.method === method && route.pattern.test(path))?.label;
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
