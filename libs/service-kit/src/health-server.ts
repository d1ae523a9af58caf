import express from 'express';
import { errorHandler, routeNotFound } from './error-handler.ts';
import { mountHealthRoutes, type ReadinessCheck } from './health.ts';
import { startHttpServer, type RunningHttpServer } from './http-server.ts';
import type { Logger } from './logger.ts';
import { requestLogging } from './request-context.ts';

/** `/healthz` and `/readyz` alone, for workers that serve no API. */
export async function startHealthServer(options: {
  service: string;
  host: string;
  port: number;
  log: Logger;
  readiness: Record<string, ReadinessCheck>;
}): Promise<RunningHttpServer> {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestLogging(options.log));
  mountHealthRoutes(app, options.service, options.readiness);
  app.use(routeNotFound());
  app.use(errorHandler());
  return startHttpServer(app, options.host, options.port);
}
