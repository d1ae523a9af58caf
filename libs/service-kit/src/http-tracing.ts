import type { NextFunction, Request, Response } from 'express';
import { routeTemplateOf } from '@envengine/service-metrics';
import { context, extractTraceContext, SpanKind, SpanStatusCode, trace, type Tracer } from '@envengine/tracing';

/**
 * A server span per request, continuing the caller's `traceparent` (the gateway's, or a
 * client's at the gateway), active for the rest of the request so that the spans and
 * outgoing calls it makes are its children. Mounted only when tracing is on.
 */
export function httpServerTracing(tracer: Tracer) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const parent = extractTraceContext(req.headers);
    const span = tracer.startSpan(req.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } }, parent);
    res.on('close', () => {
      // The route's template, not its path: names stay few (ids are in the request's log line).
      const matched = req.route ? `${req.baseUrl}${String(req.route.path)}` : req.originalUrl;
      const route = routeTemplateOf(matched);
      span.updateName(`${req.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': res.statusCode });
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(trace.setSpan(parent, span), next);
  };
}
