import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import {
  ApiError,
  errorHandler,
  mountHealthRoutes,
  readRequestBody,
  requestContext,
  requestLogging,
  routeNotFound,
  type Logger,
  type ReadinessCheck,
} from '@envengine/service-kit';
import type { TokenAuthenticator } from './auth/token-authenticator.ts';
import type { TokenBucketLimiter } from './rate-limit/token-bucket-limiter.ts';
import type { UpstreamForwarder } from './proxy/upstream-forwarder.ts';
import { upstreamFor } from './proxy/upstream-routes.ts';

export interface GatewayDependencies {
  log: Logger;
  authenticator: TokenAuthenticator;
  limiter: TokenBucketLimiter;
  forwarder: UpstreamForwarder;
  readiness: Record<string, ReadinessCheck>;
  jsonBodyLimitBytes: number;
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The public edge: authenticates the caller, applies its rate limit and the body size
 * limit, and forwards to the service that owns the path. Services validate the rest.
 */
export function createGatewayApp(deps: GatewayDependencies): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestLogging(deps.log));
  mountHealthRoutes(app, 'gateway', deps.readiness);

  app.use('/api/v1', async (req: Request, res: Response, next: NextFunction) => {
    try {
      const context = requestContext(res);
      const caller = await deps.authenticator.authenticate(req.headers.authorization);
      context.tenantId = caller.tenantId;

      const decision = deps.limiter.take(caller.tokenId);
      if (!decision.allowed) {
        throw new ApiError('rate_limited', 'Too many requests for this token; slow down.', {
          headers: { 'Retry-After': String(decision.retryAfterSeconds) },
        });
      }

      const upstream = upstreamFor(req.path);
      if (!upstream) throw new ApiError('not_found', `No route matches ${req.method} ${req.originalUrl.split('?')[0]}.`);

      const body = METHODS_WITH_BODY.has(req.method) ? await readRequestBody(req, deps.jsonBodyLimitBytes) : undefined;
      await deps.forwarder.forward(
        upstream,
        {
          method: req.method,
          url: req.originalUrl,
          headers: req.headers,
          body,
          tenantId: caller.tenantId,
          requestId: context.requestId,
        },
        res,
      );
    } catch (error) {
      next(error);
    }
  });

  app.use(routeNotFound());
  app.use(errorHandler());
  return app;
}
