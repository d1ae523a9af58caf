import { httpMetricsMiddleware, type MetricsRegistry } from '@envengine/service-metrics';
import { OPENAPI_DOCUMENT_PATH, serializedOpenApiDocument } from '@envengine/openapi-document';
import type { Tracer } from '@envengine/tracing';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { IDEMPOTENCY_KEY_PATTERN } from '@envengine/contracts';
import {
  ApiError,
  drainRefusedBody,
  errorHandler,
  httpServerTracing,
  methodHasBody,
  mountHealthRoutes,
  isJsonContentType,
  readRequestBody,
  refuseDeepJson,
  requestContext,
  requestLogging,
  routeNotFound,
  type Logger,
  type ReadinessCheck,
  unauthorized,
} from '@envengine/service-kit';
import type { Caller, TokenAuthenticator } from './auth/token-authenticator.ts';
import type { SharedRateLimiter } from './rate-limit/shared-rate-limiter.ts';
import type { TokenBucketLimiter } from './rate-limit/token-bucket-limiter.ts';
import type { IdempotencyStore } from './idempotency/idempotency-store.ts';
import { requestFingerprint } from './idempotency/request-fingerprint.ts';
import { authorizeOperation } from './auth/operation-access.ts';
import { methodsAllowedOn, operationOf, publicRouteOf, streamsBodies } from './proxy/public-routes.ts';
import type { BufferedResponse, ForwardRequest, Upstream, UpstreamForwarder, UpstreamLane } from './proxy/upstream-forwarder.ts';
import type { TenantInFlight } from './fairness/tenant-in-flight.ts';
import type { GatewayOperationId, tokenOperations } from './tokens/token-operations.ts';
import type { TokenUsage } from './tokens/token-usage.ts';

export interface GatewayDependencies {
  log: Logger;
  authenticator: TokenAuthenticator;
  limiter: Pick<SharedRateLimiter, 'take'>;
  /** Per pool token: a worker reports far more often than a person or CI calls. */
  workerLimiter: Pick<SharedRateLimiter, 'take'>;
  /** Per client address, for requests whose token is refused: each costs a lookup. */
  failedAuthLimiter: TokenBucketLimiter;
  forwarder: UpstreamForwarder;
  /** Each tenant's requests in flight to the services, per pool (UPSTREAM_TENANT_IN_FLIGHT, UPSTREAM_TENANT_STREAMS). */
  inFlight: Record<UpstreamLane, TenantInFlight>;
  /** How long a request over its tenant's share waits for one of the tenant's own to end before its 429 (UPSTREAM_TENANT_WAIT_MS). */
  inFlightWaitMs: number;
  /** The operations the gateway serves itself (API tokens). */
  gatewayOperations: ReturnType<typeof tokenOperations>;
  /** Where each API token's use is noted for its `last_used_at`. */
  tokenUsage: Pick<TokenUsage, 'seen'>;
  idempotency: IdempotencyStore;
  /** How long a repeat waits for the first request with its key to finish. */
  idempotencyWaitMs: number;
  readiness: Record<string, ReadinessCheck>;
  /** Where requests are timed; served on a listener of its own (METRICS_PORT), never on this public one. */
  metrics: MetricsRegistry;
  /** A server span per request (the trace's root, or a client's `traceparent` continued), when tracing is on. */
  tracer?: Tracer;
  /** Whether every request is timed into it (HTTP_METRICS). */
  timeRequests: boolean;
  jsonBodyLimitBytes: number;
  /** Largest bundle upload (`POST /api/v1/bundles`), streamed through. */
  bundleBodyLimitBytes: number;
}

/**
 * The public edge: authenticates the caller, applies its rate limit and the body size
 * limit, and forwards to the service that owns the path. Services validate the rest.
 */
export function createGatewayApp(deps: GatewayDependencies): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (deps.tracer) app.use(httpServerTracing(deps.tracer));
  if (deps.timeRequests) app.use(httpMetricsMiddleware(deps.metrics, publicRouteOf));
  app.use(requestLogging(deps.log));
  mountHealthRoutes(app, 'gateway', deps.readiness);
  // The API's description is public: a client is generated from it before it has a token.
  const openApiDocument = serializedOpenApiDocument();
  app.get(OPENAPI_DOCUMENT_PATH, (_req, res) => {
    res.type('application/json').send(openApiDocument);
  });

  app.use('/api/v1', async (req: Request, res: Response, next: NextFunction) => {
    try {
      const context = requestContext(res);
      const workerApi = isWorkerApi(req.path);
      // API tokens and pool tokens only: the engine's runner calls the services directly,
      // and the internal credential opens no public path.
      const caller = await authenticateCaller(deps, req);
      context.tenantId = caller.tenantId;
      if (workerApi !== (caller.poolCredentialId !== undefined)) {
        throw unauthorized(
          workerApi
            ? 'The worker API takes a pool token (POST /api/v1/pool/credentials issues one).'
            : 'A pool token opens only the worker API (/api/v1/worker/…).',
        );
      }

      const decision = await (workerApi ? deps.workerLimiter : deps.limiter).take(caller.tokenId);
      if (!decision.allowed) {
        throw new ApiError('rate_limited', 'Too many requests for this token; slow down.', {
          headers: { 'Retry-After': String(decision.retryAfterSeconds) },
        });
      }

      const operation = operationOf(req.method, req.path);
      if (!operation) {
        // Only a request that matches no operation pays for the second scan: 405 for a path the API has, else 404.
        const allowed = methodsAllowedOn(req.path);
        if (allowed.length > 0) {
          throw new ApiError('method_not_allowed', `${req.path} answers ${allowed.join(', ')}, not ${req.method}.`, { headers: { Allow: allowed.join(', ') } });
        }
        throw new ApiError('not_found', `No route matches ${req.method} ${req.originalUrl.split('?')[0]}.`);
      }
      authorizeOperation(caller, operation);
      if (caller.poolCredentialId === undefined) deps.tokenUsage.seen(caller.tokenId);

      const service = operation.endpoint.service;
      if (service === 'gateway') {
        if (req.headers['idempotency-key'] !== undefined) {
          // Its answer holds a token, which is kept only as a hash: there is nothing to replay.
          throw new ApiError('invalid_request', `${operation.operationId} takes no Idempotency-Key: its answer holds a token, which is never stored.`, {
            details: [{ path: 'Idempotency-Key', message: 'is not taken by this route' }],
          });
        }
        const body = methodHasBody(req.method) ? await readRequestBody(req, deps.jsonBodyLimitBytes) : undefined;
        const handle = deps.gatewayOperations[operation.operationId as GatewayOperationId];
        const result = await handle({
          operation,
          caller,
          body: body && body.length > 0 ? body : undefined,
          contentType: req.headers['content-type'],
          cause: { actor: caller.tokenId, requestId: context.requestId },
        });
        res.status(result.status).json({ data: result.data });
        return;
      }
      const upstream: Upstream = service;
      const environments = caller.environments.toHeader();
      const lane: UpstreamLane = streamsBodies(operation.endpoint) ? 'stream' : 'api';

      if (isBundleUpload(req)) {
        // Streamed through with a limit of its own; an upload is content-addressed, so a
        // repeat is harmless and Idempotency-Key is not needed.
        const release = await deps.inFlight.stream.acquire(caller.tenantId, deps.inFlightWaitMs);
        if (!release) {
          // Answered once a little more of it is drained, as a refused upload always is.
          await drainRefusedBody(req);
          throw overShare(deps, 'stream', { Connection: 'close' });
        }
        const upload: ForwardRequest = {
          method: req.method,
          url: `/api/v1${req.url}`,
          headers: req.headers,
          body: undefined,
          tenantId: caller.tenantId,
          requestId: context.requestId,
          actor: caller.tokenId,
          environments,
        };
        try {
          await deps.forwarder.forwardUpload(upstream, upload, req, deps.bundleBodyLimitBytes, res);
        } finally {
          release();
        }
        return;
      }

      const body = methodHasBody(req.method) ? await readRequestBody(req, deps.jsonBodyLimitBytes) : undefined;
      // Refused here, before any service parses it; the services check again behind the gateway.
      if (body !== undefined && isJsonContentType(req.headers['content-type'])) refuseDeepJson(body);
      const forwardRequest: ForwardRequest = {
        method: req.method,
        // Rebuilt from the path, never the request target as sent (which may be absolute).
        url: `/api/v1${req.url}`,
        headers: req.headers,
        body,
        tenantId: caller.tenantId,
        requestId: context.requestId,
        poolCredentialId: caller.poolCredentialId,
        actor: caller.poolCredentialId === undefined ? caller.tokenId : `worker:${caller.poolCredentialId}`,
        environments,
      };
      const idempotencyKey = req.method === 'POST' ? idempotencyKeyOf(req) : undefined;
      const release = await deps.inFlight[lane].acquire(caller.tenantId, deps.inFlightWaitMs);
      if (!release) throw overShare(deps, lane);
      try {
        if (idempotencyKey === undefined) {
          await deps.forwarder.forward(upstream, forwardRequest, res, lane);
        } else {
          const response = await forwardOnce(deps, upstream, forwardRequest, idempotencyKey, res);
          sendBuffered(res, response);
        }
      } finally {
        release();
      }
    } catch (error) {
      next(error);
    }
  });

  app.use(routeNotFound());
  app.use(errorHandler());
  return app;
}

/**
 * The caller behind the bearer token. A token that needs a database lookup counts against
 * its client address when refused, and an address over that limit gets no more lookups.
 */
async function authenticateCaller(deps: GatewayDependencies, req: Request): Promise<Caller> {
  const clientAddress = req.socket.remoteAddress ?? 'unknown';
  try {
    return await deps.authenticator.authenticate(req.headers.authorization, () => {
      if (!deps.failedAuthLimiter.hasCapacity(clientAddress)) {
        throw new ApiError('rate_limited', 'Too many requests with refused tokens from this address; slow down.', {
          headers: { 'Retry-After': '1' },
        });
      }
    });
  } catch (error) {
    if (error instanceof ApiError && error.code === 'unauthorized') deps.failedAuthLimiter.take(clientAddress);
    throw error;
  }
}

/**
 * The refusal of a request past its tenant's share of a pool. A slot of the share is held
 * until the request's answer is sent or its client has gone (the upstream request aborted
 * with it), so another tenant always finds a connection; a request over the share waits
 * behind its own tenant's first, never in front of another's.
 */
function overShare(deps: GatewayDependencies, lane: UpstreamLane, headers: Record<string, string> = {}): ApiError {
  const what = lane === 'stream' ? 'uploads and downloads' : 'requests';
  const waited = deps.inFlightWaitMs > 0 ? `, and none ended within ${deps.inFlightWaitMs} ms` : '';
  return new ApiError('rate_limited', `This tenant has ${deps.inFlight[lane].limit} ${what} in flight through the gateway, its share${waited}; retry once one has finished.`, {
    headers: { 'Retry-After': '1', ...headers },
  });
}

function isWorkerApi(path: string): boolean {
  return path === '/worker' || path.startsWith('/worker/');
}

function isBundleUpload(req: Request): boolean {
  return req.method === 'POST' && (req.path === '/bundles' || req.path === '/bundles/');
}

function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw new ApiError('invalid_request', 'The Idempotency-Key header is invalid.', {
      details: [{ path: 'Idempotency-Key', message: 'must be 1-255 visible ASCII characters' }],
    });
  }
  return key;
}

/**
 * Runs a POST at most once per (tenant, Idempotency-Key): the first request is forwarded
 * and its answer kept; a repeat with the same method, path and body gets that answer
 * again; one with a different request is refused. 5xx answers are not kept, so that a
 * retry after an outage runs the request again.
 */
async function forwardOnce(
  deps: GatewayDependencies,
  upstream: Upstream,
  request: ForwardRequest,
  key: string,
  res: Response,
): Promise<BufferedResponse> {
  const fingerprint = requestFingerprint(request.method, request.url, request.body);
  const deadline = Date.now() + deps.idempotencyWaitMs;
  for (;;) {
    const claim = await deps.idempotency.claim(request.tenantId, key, fingerprint);
    switch (claim.outcome) {
      case 'claimed': {
        let response: BufferedResponse;
        try {
          response = await deps.forwarder.exchange(upstream, request);
        } catch (error) {
          await deps.idempotency.release(request.tenantId, key).catch(() => undefined);
          throw error;
        }
        await keepOutcome(deps, request, key, response);
        return response;
      }
      case 'replay':
        res.setHeader('Idempotent-Replayed', 'true');
        return { ...claim.response, retryAfter: undefined };
      case 'mismatch':
        throw new ApiError(
          'idempotency_key_reused',
          'This Idempotency-Key was already used with a different request.',
          { details: [{ path: 'Idempotency-Key', message: 'was used with another method, path or body' }] },
        );
      case 'in_progress':
        if (Date.now() > deadline) {
          throw new ApiError('idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress.', {
            headers: { 'Retry-After': '1' },
          });
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
        break;
    }
  }
}

/**
 * Records the answer for replays. The request has run by now, so a failure to record is
 * retried once and then logged, and the client still gets the answer.
 */
async function keepOutcome(
  deps: GatewayDependencies,
  request: ForwardRequest,
  key: string,
  response: BufferedResponse,
): Promise<void> {
  const record = () =>
    response.status >= 500
      ? deps.idempotency.release(request.tenantId, key)
      : deps.idempotency.complete(request.tenantId, key, response);
  try {
    await record().catch(record);
  } catch (error) {
    deps.log.error(
      { err: (error as Error).message, req_id: request.requestId },
      'could not record the answer for an Idempotency-Key; a repeat may wait for the claim to expire',
    );
  }
}

function sendBuffered(res: Response, response: BufferedResponse): void {
  res.status(response.status);
  if (response.contentType) res.setHeader('content-type', response.contentType);
  if (response.retryAfter) res.setHeader('retry-after', response.retryAfter);
  res.end(response.body);
}
