import type { NextFunction, Request, Response } from 'express';
import { exposition, httpMetrics, type MetricsRegistry } from './engine-metrics.ts';
import { routeTemplateOf } from './route-template.ts';

/** The route label of every request that no route matched: one value, however many made-up paths arrive. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Times every request into `envengine_http_request_duration_seconds`, labeled with the
 * route's template: the matched Express route where there is one, else what `routeOf`
 * names (the gateway matches the public API's operations), else `unmatched`. A label
 * never carries what a caller sent, and the label values are as many as the routes.
 */
export function httpMetricsMiddleware(registry: MetricsRegistry, routeOf?: (req: Request) => string | undefined) {
  const { requestDuration } = httpMetrics(registry);
  return (req: Request, res: Response, next: NextFunction): void => {
    const end = requestDuration.startTimer();
    res.once('finish', () => {
      const route = req.route ? routeTemplateOf(`${req.baseUrl}${String(req.route.path)}`) : (routeOf?.(req) ?? UNMATCHED_ROUTE);
      end({ route, method: METHODS.has(req.method) ? req.method : 'OTHER', status: String(res.statusCode) });
    });
    next();
  };
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** `GET /metrics`: the Prometheus text exposition, without a token (it carries no id). */
export function metricsRoute(registry: MetricsRegistry) {
  return async (_req: Request, res: Response): Promise<void> => {
    const { contentType, text } = await exposition(registry);
    res.setHeader('content-type', contentType);
    res.end(text);
  };
}
