import type { Router } from 'express';
import type { Connection } from 'mongoose';
import type { InternalServiceConfig } from './config.ts';
import { createInternalServiceApp, type PrivateApi } from './create-service-app.ts';
import { createLogger, stopOnSignals, type Logger } from '@envengine/process-kit';
import { createMetricsRegistry, type MetricsRegistry } from '@envengine/service-metrics';
import { startTracing, type Tracing } from '@envengine/tracing';
import { startHttpServer } from './http-server.ts';
import { connectMongo, pingMongo } from './mongo.ts';

export interface InternalServiceDefinition {
  service: string;
  config: InternalServiceConfig;
  /** Builds the service's `/api/v1` routes (and any private `/internal/v1` ones) over its own database. */
  routes: (deps: { mongo: Connection; log: Logger; metrics: MetricsRegistry; tracing: Tracing }) => Promise<Router | ServiceRoutes>;
  /** Closes what the routes opened (clients of other services), after the server stopped. */
  onStop?: () => Promise<void>;
}

export interface ServiceRoutes {
  api: Router;
  privateApi?: PrivateApi | PrivateApi[];
  /** `/api/v1` routes that stream their request bodies (uploads). */
  streamingApi?: Router;
}

/**
 * Start-up shared by the internal HTTP services: connect to the service's own database,
 * serve its routes behind the internal credential, stop cleanly on SIGTERM.
 */
export async function runInternalService(definition: InternalServiceDefinition): Promise<void> {
  const { config, service } = definition;
  const tracing = startTracing(service, config);
  const log = createLogger(service, config.LOG_LEVEL);
  const mongo = await connectMongo({ url: config.MONGO_URL, dbName: config.MONGO_DB, service }, log);
  const metrics = createMetricsRegistry(service);
  const built = await definition.routes({ mongo, log, metrics, tracing });
  const routes: ServiceRoutes = 'api' in built ? built : { api: built };
  const app = createInternalServiceApp({
    service,
    log,
    internalCredential: config.INTERNAL_CREDENTIAL,
    jsonLimitBytes: config.JSON_BODY_LIMIT_BYTES,
    readiness: { mongodb: () => pingMongo(mongo) },
    metrics,
    routes: routes.api,
    privateApi: routes.privateApi,
    streamingRoutes: routes.streamingApi,
    tracer: tracing.enabled ? tracing.tracer : undefined,
  });
  const server = await startHttpServer(app, config.HOST, config.PORT);
  log.info({ port: server.port }, `${service} listening`);
  stopOnSignals(log, async () => {
    await server.close();
    await definition.onStop?.();
    await mongo.close();
    await tracing.shutdown();
  });
}
