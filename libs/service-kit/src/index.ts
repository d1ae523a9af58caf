// The engine's HTTP services: Express apps, routes, errors, internal auth, MongoDB. What any
// process needs (settings, logs, signals, health) is @envengine/process-kit, re-exported here.
export * from '@envengine/process-kit';
export * from './api-error.ts';
export * from './config.ts';
export * from './json-body.ts';
export * from './refused-body.ts';
export * from './define-route.ts';
export * from './request-context.ts';
export * from './internal-auth.ts';
export * from './unavailable.ts';
export * from './error-handler.ts';
export * from './health.ts';
export * from './create-service-app.ts';
export * from './http-server.ts';
export * from './mongo.ts';
export * from './internal-service.ts';
export * from './ttl-cache.ts';
export * from './temporal-config.ts';
export * from './mount-endpoint.ts';
export * from './http-tracing.ts';
export * from './periodic-sweep.ts';
