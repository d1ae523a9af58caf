import type { EventCause } from '@envengine/event-log';
import type { PlacementMetrics } from '@envengine/service-metrics';
import { MAX_LOG_MESSAGE_CHARS, type Environment } from '@envengine/contracts';
import type {
  AppendLogsRequest,
  Attempt,
  AttemptPlan,
  AttemptStarted,
  FinishAttemptRequest,
  Materialization,
  MaterializationWritten,
  ResolvedConnection,
  StorageConnection,
  UpstreamLocation,
  WorkerHeartbeatRequest,
  WorkerIdentity,
} from '@envengine/contracts';
import type { DeploymentClient, SecretResolverClient } from '@envengine/service-clients';
import { isUnderStoragePrefix, materializationLocation, s3StoragePrefixProblem, storageSchemeOf } from '@envengine/materialization-storage';
import { idTimestamp } from '@envengine/resource-ids';
import { ApiError, notFound } from '@envengine/service-kit';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { AttemptDispatcher } from '../runs/attempt-dispatcher.ts';
import type { AttemptLogRepository } from '../runs/attempt-log.repository.ts';
import { toAttempt } from '../runs/run-mappers.ts';
import { leaseSuperseded, type LeaseCheck, type RunRepository } from '../runs/run.repository.ts';
import type { WorkerRegistry, WorkerReport } from '../runs/worker-registry.ts';
import type { PoolStoreKeys } from '../pool/pool-store-keys.ts';
import { s3StorageConnection } from '../storage/storage-connection.ts';

/**
 * The worker API's logic: every call about an attempt is checked against its lease, so a
 * worker presumed dead that wakes up changes nothing. Other scopes are reached through
 * their typed clients: the deployment scope for materializations, the secrets scope for
 * binding modes and (audited) resolution.
 */
export class WorkerApiService {
  constructor(
    private readonly runs: RunRepository,
    private readonly workers: WorkerRegistry,
    private readonly logs: AttemptLogRepository,
    private readonly environments: EnvironmentRepository,
    private readonly dispatcher: AttemptDispatcher,
    private readonly deployments: DeploymentClient,
    private readonly resolver: SecretResolverClient,
    private readonly logLimits: AttemptPlan['log_limits'],
    private readonly metrics: PlacementMetrics,
    /** The engine's own object store, when it has one: the keys its holders are given. */
    private readonly storeKeys?: PoolStoreKeys,
  ) {}

  /** A preview's parent's id (its bindings and secrets fill in the preview's), from this scope's record; null for none. */
  private async parentIdOf(tenantId: string, environment: Environment): Promise<string | null> {
    if (environment.parent === null) return null;
    return (await this.environments.findByName(tenantId, environment.parent))?.id ?? null;
  }

  async start(tenantId: string, attemptId: string, worker: WorkerIdentity, startKey: string | null, credentialId: string | null, cause: EventCause): Promise<AttemptStarted> {
    // The caller's kind comes from its credential, never from what the worker says it is.
    const callerExecutor = credentialId === null ? 'local' : 'remote';
    const { attempt, run, replayed } = await this.runs.start(tenantId, attemptId, callerExecutor, worker, startKey, cause);
    if (!replayed) this.metrics.dispatchToRunning.observe({ executor: attempt.executor }, Math.max(0, (attempt.started_at!.getTime() - attempt.dispatched_at.getTime()) / 1000));
    const lease = attempt.lease!;
    // The worker is known to be alive from now on, even before its first heartbeat. The
    // start itself set the lease and its first heartbeat time: nothing to renew.
    await this.workers.started(tenantId, { ...worker, credentialId, draining: false }, attempt._id);
    const environment = await this.environments.findById(tenantId, run.environment_id);
    if (!environment) throw notFound(`Environment of run "${run._id}"`);
    // A preview inherits its parent's bindings: the parent is named from this scope's own record.
    const bindings = await this.resolver.bindingModes(tenantId, run.environment_id, await this.parentIdOf(tenantId, environment));
    const modes = new Map(bindings.map((binding) => [binding.name, binding.mode]));
    const wanted = new Set(attempt.assets.map((asset) => asset.key));
    const plan: AttemptPlan = {
      run_id: run._id,
      attempt_number: attempt.number,
      tenant_id: tenantId,
      environment: { id: environment.id, name: environment.name, storage_prefix: environment.storage_prefix, egress: environment.egress },
      deployment_id: run.deployment_id,
      bundle_ref: run.bundle_ref,
      assets: run.assets
        .filter((asset) => wanted.has(asset.key))
        .map((asset) => ({ ...asset, binding_mode: asset.binding === null ? null : (modes.get(asset.binding) ?? null), timeout_seconds: asset.timeout_seconds ?? null })),
      log_limits: this.logLimits,
      run_timeout:
        run.timeout_seconds && run.started_at
          ? { seconds: run.timeout_seconds, deadline: new Date(run.started_at.getTime() + run.timeout_seconds * 1000).toISOString() }
          : null,
    };
    return { attempt_id: attempt._id, lease, plan };
  }

  heartbeat(tenantId: string, request: WorkerHeartbeatRequest, credentialId: string | null): Promise<string[]> {
    // As at start, the kind is the credential's: a pool worker that says `local` is counted as
    // remote, never among the engine's runners (their slots set every tenant's fair share).
    const executor = credentialId === null ? 'local' : 'remote';
    return this.reportWorker(tenantId, { ...request.worker, executor, credentialId, draining: request.draining, stopped: request.stopped }, request.attempts);
  }

  /** Renews the worker's leases and records it with the attempts it still holds; returns those it lost. */
  private async reportWorker(tenantId: string, worker: WorkerReport, attempts: ReadonlyArray<{ id: string; lease: string; asset: string | null }>): Promise<string[]> {
    const { held, lost } = await this.runs.renewLeases(tenantId, attempts);
    await this.workers.report(tenantId, worker, held);
    return lost;
  }

  /** Stores the lines within the attempt's log limits; returns how many were. */
  async appendLogs(check: LeaseCheck, request: AppendLogsRequest): Promise<number> {
    const attempt = await this.runs.checkLease(check);
    // A worker that ignores its plan's limits (a hostile pool) fills no more than them and
    // its marker line: lines past the line limit, and characters past the character limit
    // with room for the marker (one line at most), are not stored. A batch sent again is
    // counted again: only an attempt near its limit can lose lines that way.
    const withinLines = request.lines.filter((line) => line.seq <= this.logLimits.max_lines);
    const fitting = withinLines.length === 0 ? 0 : await this.runs.takeLogRoom(check.tenantId, attempt._id, withinLines.map((line) => line.message.length), this.logLimits.max_chars + MAX_LOG_MESSAGE_CHARS);
    const kept = withinLines.slice(0, fitting);
    if (kept.length > 0) await this.logs.append(attempt, { lines: kept });
    return kept.length;
  }

  /**
   * `ctx.read(key)` of the attempt's asset `readerKey`: where the upstream's latest
   * non-quarantined rows are. Only an upstream the reader declares in its `deps` is read
   * (checked here, not only by the worker, which a pool's owner controls), and only a
   * location under the environment's storage prefix is ever handed out, whatever was recorded.
   */
  async upstream(check: LeaseCheck, readerKey: string, assetKey: string, credentialId: string | null = null): Promise<UpstreamLocation> {
    const attempt = await this.runs.checkLease(check);
    const run = attempt.assets.some((asset) => asset.key === readerKey) ? await this.runs.findRun(check.tenantId, attempt.run_id) : undefined;
    const reader = run?.assets.find((candidate) => candidate.key === readerKey);
    if (!reader) {
      throw new ApiError('invalid_request', `Asset "${readerKey}" is not part of attempt "${attempt._id}".`, { details: [{ path: 'query.asset', message: 'is not an asset of this attempt' }] });
    }
    if (!reader.deps.includes(assetKey)) throw undeclaredUpstream(reader, assetKey);
    const [own, environment] = await Promise.all([
      this.deployments.latestUsableMaterialization(check.tenantId, attempt.environment_id, assetKey),
      this.environments.findById(check.tenantId, attempt.environment_id),
    ]);
    if (!environment) throw notFound(`Environment of attempt "${attempt._id}"`);
    // A preview with none of its own reads its parent's latest (never a quarantined one):
    // the data is branched, not copied (docs/design.md#previews-promotion-and-diffs). The
    // parent is this scope's record of the preview, never anything the worker says.
    let source = environment;
    let latest = own;
    if (!latest && environment.parent !== null) {
      const parent = await this.environments.findByName(check.tenantId, environment.parent);
      if (parent) [source, latest] = [parent, await this.deployments.latestUsableMaterialization(check.tenantId, parent.id, assetKey)];
    }
    if (!latest || !latest.location) return null;
    if (!isUnderStoragePrefix(source.storage_prefix, latest.location)) {
      throw new ApiError('invalid_request', `The latest materialization of "${assetKey}" is not under the environment's storage prefix; it is not read.`, {
        details: [{ path: 'key', message: 'its location is outside the storage prefix' }],
      });
    }
    await this.runs.recordRead(check, { asset: readerKey, upstream: assetKey, materialization_id: latest.id, environment: source.name });
    const answer = { materialization_id: latest.id, location: latest.location, row_count: latest.row_count };
    if (source === environment) return answer;
    // Read only: a preview never writes its parent's files.
    const storage = storageSchemeOf(source.storage_prefix) === 's3' ? await this.s3Connection(check, attempt._id, reader.binding, source, 'read_only', credentialId, environment) : undefined;
    return { ...answer, from: { environment: source.name, storage_prefix: source.storage_prefix, ...(storage ? { storage } : {}) } };
  }

  /**
   * `ctx.connection(name)` of one asset: the binding with its secrets, through the audited
   * resolution. Only the binding that asset declares resolves; any other name is refused
   * before anything is read.
   */
  async connection(check: LeaseCheck, assetKey: string, name: string): Promise<ResolvedConnection> {
    const attempt = await this.runs.checkLease(check);
    const run = attempt.assets.some((asset) => asset.key === assetKey) ? await this.runs.findRun(check.tenantId, attempt.run_id) : undefined;
    const asset = run?.assets.find((candidate) => candidate.key === assetKey);
    if (!asset) throw notAnAssetOf(attempt._id, assetKey);
    if (asset.binding !== name) {
      throw new ApiError(
        'invalid_request',
        asset.binding === null
          ? `ctx.connection("${name}") refused: asset "${assetKey}" declares no binding; an asset resolves only the binding its manifest entry names.`
          : `ctx.connection("${name}") refused: asset "${assetKey}" declares binding "${asset.binding}", not "${name}"; an asset resolves only the binding its manifest entry names.`,
        { details: [{ path: 'name', message: `is not the binding asset "${assetKey}" declares` }] },
      );
    }
    const environment = await this.environments.findById(check.tenantId, attempt.environment_id);
    if (!environment) throw notFound(`Environment of attempt "${attempt._id}"`);
    const parentId = await this.parentIdOf(check.tenantId, environment);
    const resolved = await this.resolver.resolve(check.tenantId, { environment_id: attempt.environment_id, ...(parentId ? { parent_environment_id: parentId } : {}), binding: name, attempt_id: attempt._id });
    return { name: resolved.name, mode: resolved.mode, config: resolved.config, secret_settings: resolved.secret_versions.map((version) => version.setting) };
  }

  /**
   * Where one asset of the attempt writes (`ctx.emit`) and reads (`ctx.read`): nothing
   * more for `file://`; for `s3://` its declared binding, resolved through the audited
   * resolution, or this tenant's keys to the engine's own store when that binding names
   * no endpoint.
   */
  async storage(check: LeaseCheck, assetKey: string, credentialId: string | null): Promise<StorageConnection> {
    const attempt = await this.runs.checkLease(check);
    const run = attempt.assets.some((asset) => asset.key === assetKey) ? await this.runs.findRun(check.tenantId, attempt.run_id) : undefined;
    const asset = run?.assets.find((candidate) => candidate.key === assetKey);
    if (!asset) throw notAnAssetOf(attempt._id, assetKey);
    const environment = await this.environments.findById(check.tenantId, attempt.environment_id);
    if (!environment) throw notFound(`Environment of attempt "${attempt._id}"`);
    const scheme = storageSchemeOf(environment.storage_prefix);
    if (scheme === 'file') return { kind: 'file' };
    const problem = scheme === 's3' ? s3StoragePrefixProblem(environment.storage_prefix) : `Storage prefix ${environment.storage_prefix} has no driver; supported schemes: file://, s3://.`;
    if (problem !== null) throw new ApiError('invalid_request', problem, { details: [{ path: 'storage_prefix', message: problem }] });
    return this.s3Connection(check, attempt._id, asset.binding, environment, null, credentialId, environment);
  }

  /**
   * An `s3://` environment's connection through `binding` (resolved, audited, as the
   * reading attempt's environment `reader` sees it): the binding's own endpoint and keys,
   * or the holder's keys to the engine's store for `environment`'s path of the bucket,
   * read only for a `read_only` binding or when `mode` says so (a preview reading its
   * parent's files).
   */
  private async s3Connection(
    check: LeaseCheck,
    attemptId: string,
    /** Null for an asset that names none: the engine's own store, with the environment's keys. */
    binding: string | null,
    environment: Environment,
    mode: 'read_only' | null,
    credentialId: string | null,
    reader: Environment,
  ): Promise<StorageConnection> {
    const parentId = binding === null ? null : await this.parentIdOf(check.tenantId, reader);
    const resolved =
      binding === null
        ? { config: {}, mode: 'live' as const }
        : await this.resolver.resolve(check.tenantId, { environment_id: reader.id, ...(parentId ? { parent_environment_id: parentId } : {}), binding, attempt_id: attemptId });
    const storeKeys = this.storeKeys;
    // `s3://<bucket>/<path>`, checked at create (s3StoragePrefixProblem).
    const [, bucket = '', path = ''] = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(environment.storage_prefix) ?? [];
    // The environment's keys: its own path of the bucket, read only for a read_only binding.
    const scope = { tenantId: check.tenantId, environmentId: environment.id, objectPath: path.replace(/\/+$/, ''), mode: mode ?? resolved.mode };
    return s3StorageConnection(
      binding ?? '(none: the engine\'s own storage)',
      resolved.config,
      // The caller's own keys: its pool credential's, or the engine runner's.
      storeKeys && { endpoint: storeKeys.store.publicEndpoint, region: storeKeys.store.region, bucket: storeKeys.store.bucket, keys: () => storeKeys.grant(scope, credentialId) },
      bucket,
    );
  }

  /**
   * After `ctx.emit` wrote its file: the materialization is recorded and the asset
   * succeeded. The record lives in the deployment scope and the outcome here, so the
   * lease is checked again by the outcome's conditional write; a lease superseded in
   * between has its record taken back before the write is refused, and changes nothing.
   * A record sent again after it committed (its answer lost: a partition, a slow link) is
   * answered as recorded, also once the lease has ended: refused, the worker would remove
   * the file that the record names.
   */
  async recordMaterialization(check: LeaseCheck, assetKey: string, written: MaterializationWritten): Promise<Materialization> {
    const { attempt, recorded } = await this.runs.checkLeaseForRecord(check, assetKey, written.id);
    if (!attempt.assets.some((asset) => asset.key === assetKey)) throw notAnAssetOf(attempt._id, assetKey);
    // The location is the one the engine computes, never one the worker names: a forged
    // location would let a later ctx.read or re-check open any file the engine can.
    const environment = await this.environments.findById(check.tenantId, attempt.environment_id);
    if (!environment) throw notFound(`Environment of attempt "${attempt._id}"`);
    const skewed = recorded ? null : clockSkewOf(written.id, attempt.started_at, Date.now());
    if (skewed !== null) {
      throw new ApiError('invalid_request', `Materialization id ${written.id} carries ${skewed}; the worker's clock is off the engine's by more than ${MINT_CLOCK_TOLERANCE_MS / 1000} s, and nothing was recorded. An asset's latest materialization is its newest id: set the worker's clock (NTP).`, {
        details: [{ path: 'id', message: `carries ${skewed}` }],
      });
    }
    const expected = materializationLocation(environment.storage_prefix, assetKey, written.id);
    if (written.location !== expected) {
      throw new ApiError('invalid_request', `A materialization of "${assetKey}" with id ${written.id} is stored at ${expected}; the location given is not that one, and nothing was recorded.`, {
        details: [{ path: 'location', message: `must be ${expected}` }],
      });
    }
    const materialization = await this.deployments.recordMaterialization(check.tenantId, {
      id: written.id,
      environment_id: attempt.environment_id,
      asset_key: assetKey,
      columns: written.columns,
      row_count: written.row_count,
      location: written.location,
      bytes: written.bytes,
      run_id: attempt.run_id,
      attempt_id: attempt._id,
    });
    if (recorded) return materialization;
    const outcomeWritten = await this.runs.setAssetOutcome(check, { key: assetKey, status: 'succeeded', materialization_id: materialization.id, error: null });
    if (!outcomeWritten) {
      await this.deployments.retractMaterialization(check.tenantId, materialization.id, attempt._id);
      // Refused with the attempt's state now (a newer lease, or its end).
      await this.runs.checkLease(check);
      throw leaseSuperseded(attempt);
    }
    return materialization;
  }

  async finish(check: LeaseCheck, report: FinishAttemptRequest, cause: EventCause): Promise<Attempt> {
    const transition = await this.runs.finish(check, report, cause);
    await this.dispatcher.dispatchAll(transition.dispatch);
    this.dispatcher.ended([transition.attempt]);
    return toAttempt(transition.attempt);
  }

  /** A draining worker gives the attempt back; it is queued again at once. */
  async release(check: LeaseCheck): Promise<Attempt> {
    const attempt = await this.runs.release(check);
    await this.dispatcher.dispatch(attempt);
    return toAttempt(attempt);
  }
}

/** `ctx.read(key)` of an asset the reader does not declare in its `deps`. */
export function undeclaredUpstream(reader: { key: string; deps: readonly string[] }, assetKey: string): ApiError {
  const declared = reader.deps.length === 0 ? 'declares no deps' : `declares deps ${reader.deps.map((dep) => `"${dep}"`).join(', ')}`;
  return new ApiError('invalid_request', `ctx.read("${assetKey}") refused: asset "${reader.key}" ${declared}; an asset reads only the assets its manifest entry names in deps.`, {
    details: [{ path: 'key', message: `is not a dependency asset "${reader.key}" declares` }],
  });
}

function notAnAssetOf(attemptId: string, assetKey: string): ApiError {
  return new ApiError('invalid_request', `Asset "${assetKey}" is not part of attempt "${attemptId}".`, {
    details: [{ path: 'key', message: 'is not an asset of this attempt' }],
  });
}

/**
 * How far a worker's clock may be from the engine's. A materialization's id is minted by
 * the worker (the file is named after it, before it is recorded) and carries the worker's
 * time; an asset's latest materialization, its list (newest first) and `ctx.read` go by
 * it, so a worker whose clock is behind would record outputs that never become latest.
 */
export const MINT_CLOCK_TOLERANCE_MS = 30_000;

/** What is wrong with the time a worker minted `id` at (started after its attempt, not in the future), or null. */
export function clockSkewOf(id: string, attemptStartedAt: Date | null, nowMs: number): string | null {
  const minted = idTimestamp(id);
  const startedMs = attemptStartedAt?.getTime();
  if (startedMs !== undefined && minted < startedMs - MINT_CLOCK_TOLERANCE_MS) {
    return `the time ${new Date(minted).toISOString()}, ${Math.round((startedMs - minted) / 1000)} s before its attempt started (${attemptStartedAt!.toISOString()} by the engine's clock)`;
  }
  if (minted > nowMs + MINT_CLOCK_TOLERANCE_MS) return `the time ${new Date(minted).toISOString()}, ${Math.round((minted - nowMs) / 1000)} s after the engine's now`;
  return null;
}
