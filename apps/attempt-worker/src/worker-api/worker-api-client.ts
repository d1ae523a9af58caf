import { retrying, type Backoff } from '@envengine/retry-policy';
import { injectTraceContext } from '@envengine/tracing';
import { Readable } from 'node:stream';
import { ReplicaPools } from '@envengine/replica-pools';
import type { z } from 'zod';
import {
  ATTEMPT_LEASE_HEADER,
  errorOfBody,
  INTERNAL_HEADERS,
  parseAnswerBody,
  PublicApi,
  requestRoute,
  routeExchange,
  type AttemptLogLine,
  type ErrorBody,
  type FinishAttemptRequest,
  type MaterializationWritten,
  type RouteContract,
  type RouteData,
  type RouteInput,
  type RouteTransport,
  type WorkerHeartbeatRequest,
  type WorkerIdentity,
} from '@envengine/contracts';

/** A refusal of the worker API: `status` and `code` as the error body gave them. */
export class WorkerApiError extends Error {
  override readonly name = 'WorkerApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  /** The attempt is not this worker's to run or report on any more. */
  get final(): boolean {
    return this.status === 404 || this.status === 409 || this.status === 401;
  }
}

/**
 * Where the worker API is and who the worker is to it: a pool's worker reaches it through
 * the public gateway with its pool token; the engine's own runner calls the owning
 * services' internal API directly (the placement-service, and the deployment-service for
 * bundles) with the internal credential, naming each attempt's tenant. The gateway takes
 * no internal credential on any public path.
 */
export type WorkerApiEndpoint =
  | { kind: 'pool'; gatewayUrl: string; token: string }
  | { kind: 'engine'; placementUrls: readonly string[]; deploymentUrls: readonly string[]; internalCredential: string };

/** An attempt's address in the worker API: who it belongs to and the lease it is held under. */
export interface HeldAttempt {
  tenantId: string;
  attemptId: string;
  lease: string;
}

/** The worker API, over keep-alive connections. */
export class WorkerApiClient {
  /** Attempts, leases, reports, connections: the gateway for a pool, the placement-service for the engine. */
  private readonly attempts: ReplicaPools;
  /** Bundles: the gateway for a pool, the deployment-service for the engine. */
  private readonly bundles: ReplicaPools;

  constructor(private readonly endpoint: WorkerApiEndpoint) {
    const options = { connections: 16, keepAliveTimeout: 30_000, headersTimeout: 30_000, bodyTimeout: 120_000 };
    if (endpoint.kind === 'pool') {
      this.attempts = new ReplicaPools([endpoint.gatewayUrl], options);
      this.bundles = this.attempts;
    } else {
      this.attempts = new ReplicaPools(endpoint.placementUrls, options);
      this.bundles = new ReplicaPools(endpoint.deploymentUrls, options);
    }
  }

  /** `startKey`: random per delivery; the call's own retries send it again, so a start whose answer was lost gets its lease. */
  start(tenantId: string, attemptId: string, worker: WorkerIdentity, startKey: string) {
    return this.call(PublicApi.startAttempt, tenantId, { params: { id: attemptId }, body: { worker, start_key: startKey } });
  }

  heartbeat(tenantId: string, request: z.input<typeof WorkerHeartbeatRequest>) {
    return this.call(PublicApi.workerHeartbeat, tenantId, { body: request });
  }

  async appendLogs(held: HeldAttempt, lines: AttemptLogLine[]): Promise<void> {
    await this.call(PublicApi.appendAttemptLogs, held.tenantId, { params: { id: held.attemptId }, body: { lines }, headers: leaseOf(held) });
  }

  /** `ctx.read(assetKey)` of the attempt's asset `readerKey`. */
  upstream(held: HeldAttempt, readerKey: string, assetKey: string) {
    return this.call(PublicApi.attemptUpstream, held.tenantId, { params: { id: held.attemptId, key: assetKey }, query: { asset: readerKey }, headers: leaseOf(held) });
  }

  /** `ctx.connection(name)` of the attempt's asset `assetKey`. */
  connection(held: HeldAttempt, assetKey: string, name: string) {
    return this.call(PublicApi.attemptConnection, held.tenantId, { params: { id: held.attemptId, name }, body: { asset: assetKey }, headers: leaseOf(held) });
  }

  /** Where the attempt's asset `assetKey` writes and reads its rows (`ctx.emit`, `ctx.read`). */
  storage(held: HeldAttempt, assetKey: string) {
    return this.call(PublicApi.attemptStorage, held.tenantId, { params: { id: held.attemptId }, body: { asset: assetKey }, headers: leaseOf(held) });
  }

  recordMaterialization(held: HeldAttempt, assetKey: string, written: MaterializationWritten) {
    return this.call(PublicApi.recordMaterialization, held.tenantId, { params: { id: held.attemptId, key: assetKey }, body: written, headers: leaseOf(held) });
  }

  finish(held: HeldAttempt, report: FinishAttemptRequest) {
    return this.call(PublicApi.finishAttempt, held.tenantId, { params: { id: held.attemptId }, body: report, headers: leaseOf(held) });
  }

  release(held: HeldAttempt, reason: string) {
    return this.call(PublicApi.releaseAttempt, held.tenantId, { params: { id: held.attemptId }, body: { reason }, headers: leaseOf(held) });
  }

  /** The bundle's bytes, streamed: the exchange comes from the route, the body is not read into memory. */
  async bundle(tenantId: string, bundleRef: string): Promise<Readable> {
    const exchange = routeExchange(PublicApi.downloadBundle, { params: { ref: bundleRef } });
    const response = await this.bundles.request({ method: exchange.method, path: exchange.path, headers: this.headers(tenantId, exchange.headers), idempotent: true });
    if (response.statusCode !== 200) throw refusal(response.statusCode, errorOfBody(await response.body.text()));
    return response.body as unknown as Readable;
  }

  async close(): Promise<void> {
    await Promise.all([...new Set([this.attempts, this.bundles])].map((pool) => pool.close()));
  }

  /** Who the worker is to the endpoint, with the route's own headers (a lease) and the trace context. */
  private headers(tenantId: string, routeHeaders: Readonly<Record<string, string>>): Record<string, string> {
    const headers: Record<string, string> =
      this.endpoint.kind === 'pool'
        ? { ...routeHeaders, authorization: `Bearer ${this.endpoint.token}` }
        : { ...routeHeaders, [INTERNAL_HEADERS.credential]: this.endpoint.internalCredential, [INTERNAL_HEADERS.tenantId]: tenantId };
    // The attempt's span continues on the engine's side (nothing is added when tracing is off).
    return injectTraceContext(headers);
  }

  private call<R extends RouteContract>(route: R, tenantId: string, input: RouteInput<R>): Promise<RouteData<R>> {
    return requestRoute(this.transport(tenantId), route, input);
  }

  private transport(tenantId: string): RouteTransport {
    return {
      send: async (exchange) => {
        const headers = this.headers(tenantId, exchange.headers);
        // A restarting service or gateway (503, a refused connection) is waited out, up to
        // RETRY_FOR_MS, so that user code's ctx calls survive it; every call is idempotent
        // or fenced by the lease.
        const answer = await retrying(
          async () => {
            const response = await this.attempts.request({
              method: exchange.method,
              path: exchange.path,
              headers,
              body: exchange.body,
              // After a reset socket only a read goes to another replica at once: a start or a
              // log append that may have arrived is not sent twice there.
              idempotent: exchange.method === 'GET',
            });
            return { status: response.statusCode, text: await response.body.text() };
          },
          { backoff: UNREACHABLE_BACKOFF, deadline: Date.now() + RETRY_FOR_MS, retryValue: ({ status }) => status === 502 || status === 503 },
        );
        return { status: answer.status, body: parseAnswerBody(answer.text) };
      },
      refused: (_exchange, status, error) => refusal(status, error),
    };
  }
}

/** How long a worker API call waits out an unreachable service before it fails. */
const RETRY_FOR_MS = 30_000;
const UNREACHABLE_BACKOFF: Backoff = { firstMs: 100, factor: 2, maxMs: 2_000 };

function leaseOf(held: HeldAttempt): Record<string, string> {
  return { [ATTEMPT_LEASE_HEADER]: held.lease };
}

function refusal(status: number, error: ErrorBody['error'] | null): WorkerApiError {
  return error ? new WorkerApiError(status, error.code, error.message) : new WorkerApiError(status, 'unavailable', `the worker API answered ${status}`);
}
