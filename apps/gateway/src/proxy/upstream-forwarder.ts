import { injectTraceContext } from '@envengine/tracing';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import { INTERNAL_HEADERS, type ApiService } from '@envengine/contracts';
import { ApiError, drainRefusedBody, uploadCutOff, whenUploadCutOff } from '@envengine/service-kit';
import { ReplicaPools } from '@envengine/replica-pools';

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
 * with the internal credential. A replica that refuses the connection is skipped for the
 * next one (ReplicaPools).
 */
export class UpstreamForwarder {
  private readonly pools: Record<Upstream, ReplicaPools>;

  constructor(
    origins: Record<Upstream, readonly string[]>,
    private readonly internalCredential: string,
    options: { connections: number; timeoutMs: number },
  ) {
    const make = (replicas: readonly string[]) =>
      new ReplicaPools(replicas, {
        connections: options.connections,
        pipelining: 1,
        keepAliveTimeout: 60_000,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
    this.pools = {
      placement: make(origins.placement),
      deployment: make(origins.deployment),
      secrets: make(origins.secrets),
    };
  }

  /** Forwards and streams the answer straight to the client. */
  async forward(upstream: Upstream, request: ForwardRequest, res: Response): Promise<void> {
    const response = await this.dispatch(upstream, request);
    res.status(response.statusCode);
    for (const name of FORWARDED_RESPONSE_HEADERS) {
      const value = response.headers[name];
      if (typeof value === 'string') res.setHeader(name, value);
    }
    await pipeline(response.body, res);
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
    const abort = new AbortController();
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        if (received > limitBytes) {
          // Past the limit: stop the upstream request at once and stop reading.
          exceeded = true;
          upload.unpipe(counted);
          abort.abort(tooLarge());
          callback();
          return;
        }
        callback(null, chunk);
      },
    });
    // Piping passes no error on: a client that goes away mid-upload ends the upstream
    // request here, or the service would wait on a body that never ends, its store half-written.
    const detach = whenUploadCutOff(upload, () => {
      if (exceeded) return;
      brokenOff = true;
      abort.abort(new Error('the client closed the upload before its end'));
    });
    upload.pipe(counted);
    let response;
    try {
      response = await this.dispatch(upstream, request, counted, abort.signal);
    } catch (error) {
      if (exceeded) {
        await drainRefusedBody(upload);
        throw tooLarge();
      }
      if (brokenOff) throw uploadCutOff();
      throw error;
    } finally {
      detach();
    }
    if (exceeded) {
      await response.body.dump();
      await drainRefusedBody(upload);
      throw tooLarge();
    }
    res.status(response.statusCode);
    for (const name of FORWARDED_RESPONSE_HEADERS) {
      const value = response.headers[name];
      if (typeof value === 'string') res.setHeader(name, value);
    }
    await pipeline(response.body, res);
  }

  /** Forwards and reads the whole answer, for callers that keep it (idempotent replays). */
  async exchange(upstream: Upstream, request: ForwardRequest): Promise<BufferedResponse> {
    const response = await this.dispatch(upstream, request);
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

  private async dispatch(upstream: Upstream, request: ForwardRequest, stream?: Readable, signal?: AbortSignal) {
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
      response = await this.pools[upstream].request({
        path: request.url,
        method: request.method as 'GET',
        headers,
        body: stream ?? (request.body && request.body.length > 0 ? request.body : undefined),
        signal,
        // A kept-alive socket a replica closed just as it was reused (say, while it
        // restarts) may have carried the request: sent again for reads only.
        idempotent: SAFE_METHODS.has(request.method),
      });
    } catch {
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
    await Promise.all(Object.values(this.pools).map((pool) => pool.close()));
  }
}
