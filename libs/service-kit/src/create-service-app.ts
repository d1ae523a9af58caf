import express, { type Express, type Router } from 'express';
import { errorHandler, routeNotFound } from './error-handler.ts';
import type { ReadinessCheck } from '@envengine/process-kit';
import { mountHealthRoutes } from './health.ts';
import { requireInternalCaller } from './internal-auth.ts';
import { jsonBody } from './json-body.ts';
import type { Logger } from '@envengine/process-kit';
import { requestLogging } from './request-context.ts';
import { httpMetricsMiddleware, metricsRoute, type MetricsRegistry } from '@envengine/service-metrics';
import type { Tracer } from '@envengine/tracing';
import { httpServerTracing } from './http-tracing.ts';

export interface InternalServiceAppOptions {
  service: string;
  log: Logger;
  internalCredential: string;
  readiness: Record<string, ReadinessCheck>;
  /** Served at `/metrics` (no credential: it carries no id); every request is timed into it. */
  metrics: MetricsRegistry;
  /** Largest JSON body accepted, in bytes. Default 1 MiB. */
  jsonLimitBytes?: number;
  /** Routes under `/api/v1`, reached only through the gateway. */
  routes: Router;
  /** Routes under `/internal/v1` for callers other than the gateway, behind a credential of their own. */
  privateApi?: PrivateApi | PrivateApi[];
  /** Routes under `/api/v1` that read their own (non-JSON, streamed) request bodies. */
  streamingRoutes?: Router;
  /** A server span per request, when tracing is on. */
  tracer?: Tracer;
}

export interface PrivateApi {
  credential: string;
  routes: Router;
  /** Where it is mounted; default `/internal/v1`. A narrower path comes first in a list. */
  path?: string;
}

/** The Express app of an internal service: health, gateway-only API, one error edge. */
export function createInternalServiceApp(options: InternalServiceAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (options.tracer) app.use(httpServerTracing(options.tracer));
  app.use(httpMetricsMiddleware(options.metrics));
  app.use(requestLogging(options.log));
  mountHealthRoutes(app, options.service, options.readiness);
  app.get('/metrics', metricsRoute(options.metrics));
  const readJson = jsonBody(options.jsonLimitBytes ?? 1024 * 1024);
  // Mounted first and closed off: the gateway's credential does not open these routes.
  // Internal calls may carry a whole manifest with its findings, so their limit is wider.
  const readInternalJson = jsonBody(Math.max(options.jsonLimitBytes ?? 0, 8 * 1024 * 1024));
  for (const privateApi of [options.privateApi ?? []].flat()) {
    app.use(privateApi.path ?? '/internal/v1', requireInternalCaller(privateApi.credential), readInternalJson, privateApi.routes, routeNotFound());
  }
  app.use(requireInternalCaller(options.internalCredential));
  if (options.streamingRoutes) app.use('/api/v1', options.streamingRoutes);
  app.use(readJson);
  app.use('/api/v1', options.routes);
  app.use(routeNotFound());
  app.use(errorHandler());
  return app;
}
