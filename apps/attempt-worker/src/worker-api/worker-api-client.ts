import { injectTraceContext } from '@envengine/tracing';
import { Readable } from 'node:stream';
import { ReplicaPools } from '@envengine/replica-pools';
import type { z } from 'zod';
import {
  ATTEMPT_LEASE_HEADER,
  AttemptFinished,
  AttemptStarted,
  errorOfBody,
  INTERNAL_HEADERS,
  Materialization,
  ResolvedConnection,
  StorageConnection,
  UpstreamLocation,
  WorkerHeartbeatResponse,
  type AppendLogsRequest,
  type StartAttemptRequest,
  type AttemptLogLine,
  type ConnectionRequest,
  type StorageRequest,
  type FinishAttemptRequest,
  type MaterializationWritten,
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
    return this.call(AttemptStarted, 'POST', `/attempts/${enc(attemptId)}/start`, tenantId, undefined, { worker, start_key: startKey } satisfies StartAttemptRequest);
  }

  heartbeat(tenantId: string, request: z.input<typeof WorkerHeartbeatRequest>) {
    return this.call(WorkerHeartbeatResponse, 'POST', '/heartbeat', tenantId, undefined, request);
  }

  async appendLogs(held: HeldAttempt, lines: AttemptLogLine[]): Promise<void> {
    const body: AppendLogsRequest = { lines };
    await this.call(undefined, 'POST', `/attempts/${enc(held.attemptId)}/logs`, held.tenantId, held.lease, body);
  }

  upstream(held: HeldAttempt, assetKey: string) {
    return this.call(UpstreamLocation, 'GET', `/attempts/${enc(held.attemptId)}/upstreams/${enc(assetKey)}`, held.tenantId, held.lease);
  }

  /** `ctx.connection(name)` of the attempt's asset `assetKey`. */
  connection(held: HeldAttempt, assetKey: string, name: string) {
    const body: ConnectionRequest = { asset: assetKey };
    return this.call(ResolvedConnection, 'POST', `/attempts/${enc(held.attemptId)}/connections/${enc(name)}`, held.tenantId, held.lease, body);
  }

  /** Where the attempt's asset `assetKey` writes and reads its rows (`ctx.emit`, `ctx.read`). */
  storage(held: HeldAttempt, assetKey: string) {
    const body: StorageRequest = { asset: assetKey };
    return this.call(StorageConnection, 'POST', `/attempts/${enc(held.attemptId)}/storage`, held.tenantId, held.lease, body);
  }

  recordMaterialization(held: HeldAttempt, assetKey: string, written: MaterializationWritten) {
    return this.call(Materialization, 'POST', `/attempts/${enc(held.attemptId)}/assets/${enc(assetKey)}/materializations`, held.tenantId, held.lease, written);
  }

  finish(held: HeldAttempt, report: FinishAttemptRequest) {
    return this.call(AttemptFinished, 'POST', `/attempts/${enc(held.attemptId)}/finish`, held.tenantId, held.lease, report);
  }

  release(held: HeldAttempt, reason: string) {
    return this.call(AttemptFinished, 'POST', `/attempts/${enc(held.attemptId)}/release`, held.tenantId, held.lease, { reason });
  }

  /** The bundle's bytes, streamed. */
  async bundle(tenantId: string, bundleRef: string): Promise<Readable> {
    const response = await this.bundles.request({ method: 'GET', path: `/api/v1/worker/bundles/${enc(bundleRef)}`, headers: this.headers(tenantId), idempotent: true });
    if (response.statusCode !== 200) throw await refusal(response.statusCode, await response.body.text());
    return response.body as unknown as Readable;
  }

  async close(): Promise<void> {
    await Promise.all([...new Set([this.attempts, this.bundles])].map((pool) => pool.close()));
  }

  private headers(tenantId: string, lease?: string): Record<string, string> {
    const headers: Record<string, string> =
      this.endpoint.kind === 'pool'
        ? { authorization: `Bearer ${this.endpoint.token}` }
        : { [INTERNAL_HEADERS.credential]: this.endpoint.internalCredential, [INTERNAL_HEADERS.tenantId]: tenantId };
    if (lease) headers[ATTEMPT_LEASE_HEADER] = lease;
    // The attempt's span continues on the engine's side (nothing is added when tracing is off).
    return injectTraceContext(headers);
  }

  private async call<T extends z.ZodType | undefined>(
    schema: T,
    method: 'GET' | 'POST',
    path: string,
    tenantId: string,
    lease?: string,
    body?: unknown,
  ): Promise<T extends z.ZodType ? z.infer<T> : void> {
    const headers = this.headers(tenantId, lease);
    if (body !== undefined) headers['content-type'] = 'application/json';
    // A restarting service or gateway (503, a refused connection) is waited out, up to
    // RETRY_FOR_MS, so that user code's ctx calls survive it; every call is idempotent
    // or fenced by the lease.
    const deadline = Date.now() + RETRY_FOR_MS;
    let statusCode: number;
    let text: string;
    for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
      try {
        const response = await this.attempts.request({
          method,
          path: `/api/v1/worker${path}`,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          // After a reset socket only a read goes to another replica at once: a start or a
          // log append that may have arrived is not sent twice there.
          idempotent: method === 'GET',
        });
        statusCode = response.statusCode;
        text = await response.body.text();
        if ((statusCode !== 502 && statusCode !== 503) || Date.now() > deadline) break;
      } catch (error) {
        if (Date.now() > deadline) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    if (statusCode < 200 || statusCode >= 300) throw await refusal(statusCode, text);
    if (!schema) return undefined as never;
    return schema.parse((JSON.parse(text) as { data: unknown }).data) as never;
  }
}

const enc = encodeURIComponent;

/** How long a worker API call waits out an unreachable service before it fails. */
const RETRY_FOR_MS = 30_000;

async function refusal(status: number, text: string): Promise<WorkerApiError> {
  const error = errorOfBody(text);
  return error ? new WorkerApiError(status, error.code, error.message) : new WorkerApiError(status, 'unavailable', `the worker API answered ${status}`);
}
