import type { NextFunction, Request, Response } from 'express';
import { exposition, httpMetrics, type MetricsRegistry } from './engine-metrics.ts';
import { routeTemplateOf } from './route-template.ts';

/**
 * Times every request into `envengine_http_request_duration_seconds`, labeled with the
 * route's template: the matched Express route where there is one, else the path with
 * every value replaced (`routeTemplateOf`).
 */
export function httpMetricsMiddleware(registry: MetricsRegistry) {
  const { requestDuration } = httpMetrics(registry);
  return (req: Request, res: Response, next: NextFunction): void => {
    const end = requestDuration.startTimer();
    res.once('finish', () => {
      const matched = req.route ? `${req.baseUrl}${String(req.route.path)}` : req.originalUrl;
      end({ route: routeTemplateOf(matched), method: METHODS.has(req.method) ? req.method : 'OTHER', status: String(res.statusCode) });
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
