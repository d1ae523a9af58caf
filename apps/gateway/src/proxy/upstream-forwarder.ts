import { injectTraceContext } from '@envengine/tracing';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Dispatcher } from 'undici';
import type { Response } from 'express';
import { INTERNAL_HEADERS, type ApiService } from '@envengine/contracts';
import { ApiError, drainRefusedBody, uploadCutOff, whenUploadCutOff } from '@envengine/service-kit';
import { ReplicaPools } from '@envengine/replica-pools';
import { BodyTooSlowError, rateGuard, type BodyRateLimits } from '../fairness/body-rate.ts';

/** A service the gateway forwards to: every one that serves public routes but the gateway itself (its tokens). */
export type Upstream = Exclude<ApiService, 'gateway'>;

/** Request headers a client may pass on to a service (`x-attempt-lease`: the worker API's fence). */
const FORWARDED_REQUEST_HEADERS = ['content-type', 'accept', 'x-attempt-lease', 'range', 'if-range'] as const;
/** Response headers a service may pass back to a client. */
const FORWARDED_RESPONSE_HEADERS = [
  'content-type', 'content-length', 'retry-after', 'location', 'cache-control',
  // A materialization's download: byte ranges, its validator and its file name.
  'accept-ranges', 'content-range', 'etag', 'content-disposition',
] as const;

const SAFE_METHODS = new Set(['GET', 'HEAD']);

/**
 * Which of a service's two pools a request takes: `stream` for the routes whose bodies are
 * files (bundle uploads and downloads, materialization downloads), `api` for the rest. A
 * client that moves a file slowly then holds a connection only of the stream pool, and the
 * API's reads and writes always find one of theirs.
 */
export type UpstreamLane = 'api' | 'stream';

export interface UpstreamOptions {
  /** Connections to each replica of each service for the API's reads and writes (UPSTREAM_CONNECTIONS). */
  connections: number;
  /** Connections to each replica of each service for uploads and downloads (UPSTREAM_STREAM_CONNECTIONS). */
  streamConnections: number;
  timeoutMs: number;
  /** The slowest a forwarded request or response body may move (BODY_MIN_BYTES_PER_SECOND over BODY_RATE_WINDOW_MS). */
  bodyRate: BodyRateLimits;
}

export interface BufferedResponse {
  status: number;
  contentType: string | undefined;
  retryAfter: string | undefined;
  body: string;
}

export interface ForwardRequest {
  method: string;
  /** Path and query as the client sent them, e.g. `/api/v1/environments?x=1`. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer | undefined;
  tenantId: string;
  requestId: string;
  /** The pool credential of a worker API call made with a pool token. */
  poolCredentialId?: string;
  /** Who asked, recorded on the events the request causes: the token's id, or `worker:<pool credential>`. */
  actor: string;
  /** The environments an API token is limited to (EnvironmentAccess's header); absent for none. */
  environments?: string;
}

/**
 * Keep-alive connection pools to the replicas of each internal service, taken in turn,
 * with the internal credential, two per service (UpstreamLane). A replica that refuses the
 * connection is skipped for the next one (ReplicaPools). A request whose client goes away
 * is aborted upstream at once, and a body slower than the minimum rate is cut off: no
 * connection goes back to its pool with a body unread, or stays out of it for a client.
 */
export class UpstreamForwarder {
  private readonly pools: Record<UpstreamLane, Record<Upstream, ReplicaPools>>;
  private readonly bodyRate: BodyRateLimits;

  constructor(
    origins: Record<Upstream, readonly string[]>,
    private readonly internalCredential: string,
    options: UpstreamOptions,
  ) {
    const make = (replicas: readonly string[], connections: number) =>
      new ReplicaPools(replicas, {
        connections,
        pipelining: 1,
        keepAliveTimeout: 60_000,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
    const lane = (connections: number) => ({
      placement: make(origins.placement, connections),
      deployment: make(origins.deployment, connections),
      secrets: make(origins.secrets, connections),
    });
    this.pools = { api: lane(options.connections), stream: lane(options.streamConnections) };
    this.bodyRate = options.bodyRate;
  }

  /** Forwards and streams the answer straight to the client. */
  async forward(upstream: Upstream, request: ForwardRequest, res: Response, lane: UpstreamLane = 'api'): Promise<void> {
    const abort = abortWhenClientLeaves(res);
    try {
      const response = await this.dispatch(upstream, lane, request, undefined, abort.signal);
      await this.relay(response, res);
    } finally {
      abort.detach();
    }
  }

  /**
   * The service's answer passed to the client at the minimum rate or faster. Whatever ends
   * it (the client gone, too slow, the answer broken), its body is destroyed unless it was
   * read to its end, which closes the connection rather than returning it to the pool with
   * bytes unread: a request that waited for a connection while its client left fails to
   * pipe without touching the body at all.
   */
  private async relay(response: Dispatcher.ResponseData, res: Response): Promise<void> {
    try {
      res.status(response.statusCode);
      for (const name of FORWARDED_RESPONSE_HEADERS) {
        const value = response.headers[name];
        if (typeof value === 'string') res.setHeader(name, value);
      }
      await pipeline(response.body, rateGuard(this.bodyRate, 'response body'), res);
    } finally {
      if (!response.body.readableEnded) response.body.destroy();
    }
  }

  /**
   * Forwards an upload as it arrives, never holding it whole, and answers 413 as soon as
   * it passes `limitBytes` (by the declared length, or by counting).
   */
  async forwardUpload(upstream: Upstream, request: ForwardRequest, upload: Readable, limitBytes: number, res: Response): Promise<void> {
    const tooLarge = () =>
      new ApiError('payload_too_large', `The upload exceeds ${limitBytes} bytes.`, { headers: { Connection: 'close' } });
    // Answered once a little more of it is drained, so that the client reads the answer rather than a reset.
    if (Number(request.headers['content-length'] ?? 0) > limitBytes) {
      await drainRefusedBody(upload);
      throw tooLarge();
    }
    let received = 0;
    let exceeded = false;
    let brokenOff = false;
    let tooSlow: BodyTooSlowError | undefined;
    const abort = abortWhenClientLeaves(res);
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        if (received > limitBytes) {
          // Past the limit: stop the upstream request at once and stop reading.
          exceeded = true;
          upload.unpipe(guard);
          abort.abort(tooLarge());
          callback();
          return;
        }
        callback(null, chunk);
      },
    });
    // A sender that drips holds its connection to the service: below the minimum rate the
    // upload is cut off, counted from when the connection starts reading it.
    const guard = rateGuard(this.bodyRate, 'upload', false);
    counted.once('resume', () => guard.start());
    guard.once('error', (error: Error) => {
      if (exceeded || !(error instanceof BodyTooSlowError)) return;
      tooSlow = error;
      upload.unpipe(guard);
      abort.abort(error);
    });
    // Piping passes no error on: a client that goes away mid-upload ends the upstream
    // request here, or the service would wait on a body that never ends, its store half-written.
    const detach = whenUploadCutOff(upload, () => {
      if (exceeded || tooSlow) return;
      brokenOff = true;
      abort.abort(new Error('the client closed the upload before its end'));
    });
    upload.pipe(guard).pipe(counted);
    let response;
    try {
      response = await this.dispatch(upstream, 'stream', request, counted, abort.signal);
    } catch (error) {
      // Its windows end with the request (an answer before the last byte leaves the rest flowing).
      guard.destroy();
      if (exceeded) {
        await drainRefusedBody(upload);
        throw tooLarge();
      }
      if (tooSlow) throw uploadTooSlow(this.bodyRate);
      if (brokenOff) throw uploadCutOff();
      throw error;
    } finally {
      detach();
    }
    try {
      if (exceeded) {
        await response.body.dump();
        await drainRefusedBody(upload);
        throw tooLarge();
      }
      await this.relay(response, res);
    } finally {
      abort.detach();
    }
  }

  /** Forwards and reads the whole answer, for callers that keep it (idempotent replays). */
  async exchange(upstream: Upstream, request: ForwardRequest): Promise<BufferedResponse> {
    // Not aborted when the client leaves: the answer is kept for the repeat with its key.
    const response = await this.dispatch(upstream, 'api', request);
    const body = Buffer.from(await response.body.arrayBuffer()).toString('utf8');
    const contentType = response.headers['content-type'];
    const retryAfter = response.headers['retry-after'];
    return {
      status: response.statusCode,
      contentType: typeof contentType === 'string' ? contentType : undefined,
      retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined,
      body,
    };
  }

  private async dispatch(upstream: Upstream, lane: UpstreamLane, request: ForwardRequest, stream?: Readable, signal?: AbortSignal) {
    const headers: Record<string, string> = {
      [INTERNAL_HEADERS.credential]: this.internalCredential,
      [INTERNAL_HEADERS.tenantId]: request.tenantId,
      [INTERNAL_HEADERS.requestId]: request.requestId,
      [INTERNAL_HEADERS.actor]: request.actor,
    };
    if (request.poolCredentialId) headers[INTERNAL_HEADERS.poolCredential] = request.poolCredentialId;
    if (request.environments !== undefined) headers[INTERNAL_HEADERS.environments] = request.environments;
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    // The gateway's request span is the parent of the service's (never a client's header passed on).
    injectTraceContext(headers);
    let response;
    try {
      response = await this.pools[lane][upstream].request({
        path: request.url,
        method: request.method as 'GET',
        headers,
        body: stream ?? (request.body && request.body.length > 0 ? request.body : undefined),
        signal,
        // A kept-alive socket a replica closed just as it was reused (say, while it
        // restarts) may have carried the request: sent again for reads only.
        idempotent: SAFE_METHODS.has(request.method),
      });
    } catch (error) {
      // The client left (or its upload was refused) while the request waited: nothing to answer.
      if (signal?.aborted) throw signal.reason ?? error;
      throw new ApiError('unavailable', `The ${upstream} service is unreachable; try again shortly.`, {
        headers: { 'Retry-After': '2' },
      });
    }
    if (response.statusCode === 401) {
      // The gateway itself was refused: a credential mismatch between deployables.
      await response.body.dump();
      throw new Error(`the ${upstream} service refused the gateway's internal credential`);
    }
    return response;
  }

  async close(): Promise<void> {
    await Promise.all(Object.values(this.pools).flatMap((lane) => Object.values(lane).map((pool) => pool.close())));
  }
}

/**
 * An abort signal fired when the client's connection closes before its answer is sent: the
 * request is dropped from the pool's queue, or its connection to the service is destroyed.
 */
function abortWhenClientLeaves(res: Response): AbortController & { detach(): void } {
  const abort = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) abort.abort(new ClientGoneError());
  };
  if (res.destroyed || res.socket === null || res.socket.destroyed) onClose();
  else res.once('close', onClose);
  return Object.assign(abort, { detach: () => void res.off('close', onClose) });
}

/** What a request is aborted with when its client went away (the error edge answers nothing to it). */
class ClientGoneError extends Error {
  readonly code = 'ECONNRESET';

  constructor() {
    super('the client closed its connection before the answer');
  }
}

function uploadTooSlow(limits: BodyRateLimits): ApiError {
  return new ApiError(
    'invalid_request',
    `The upload was cut off: it sent fewer than ${limits.minBytesPerSecond} bytes/s over ${limits.windowMs / 1000} s (BODY_MIN_BYTES_PER_SECOND).`,
    { details: [{ path: '(body)', message: 'was sent too slowly' }], headers: { Connection: 'close' } },
  );
}
