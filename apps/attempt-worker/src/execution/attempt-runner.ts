import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { AttemptAssetOutcome, AttemptPlan, PlannedAsset, StorageConnection, WorkerIdentity } from '@envengine/contracts';
import { newId } from '@envengine/resource-ids';
import { assetTimeLimit } from './asset-time-limit.ts';
import { MaterializationUpload, storageDriverFor, storageSchemeOf, type DeclaredSchema, type StorageDriver } from '@envengine/materialization-storage';
import type { Logger } from '@envengine/process-kit';
import { context, inSpan, SpanStatusCode, type Tracer } from '@envengine/tracing';
import type { BundleSource, HeldBundle } from '../bundles/bundle-cache.ts';
import { runAssetInSandbox, type EmitSink, type SandboxedAssetState } from '../sandbox/asset-runner.ts';
import type { SandboxSettings } from '../sandbox/os-sandbox.ts';
import type { WarmSandboxes } from '../sandbox/warm-sandboxes.ts';
import { WorkerApiError, type HeldAttempt, type WorkerApiClient } from '../worker-api/worker-api-client.ts';
import type { EndpointGuard } from '../storage/endpoint-guard.ts';
import type { LeaseKeeper, StopReason } from './lease-keeper.ts';
import { LogShipper } from './log-shipper.ts';
import { withEgressHint } from './egress-hint.ts';

export interface AttemptRunnerOptions {
  assetTimeoutMs: number;
  /** The OS sandbox, its limits and the children's whole environment (never the worker's own, which holds its credentials). */
  sandbox: SandboxSettings;
  /** Sandboxed children started ahead of need with those settings. */
  sandboxes: WarmSandboxes;
  logFlushMs: number;
  /** The engine's runner only: keeps a tenant's storage endpoint off the engine's network. */
  endpointGuard?: EndpointGuard;
  /** An `attempt` span per attempt and an `asset` span per asset (a no-op tracer when tracing is off). */
  tracer: Tracer;
  /** Where an emit's Parquet file is written as its bytes arrive, before it is stored (the worker's own disk). */
  spoolDirectory: string;
  /** The largest materialization one emit may write; past it the asset fails. */
  maxMaterializationBytes: number;
}

export type AttemptResult = 'succeeded' | 'failed' | 'refused' | 'superseded' | 'released';

type AssetReport = Pick<AttemptAssetOutcome, 'key' | 'status' | 'error'>;

/** Where a running attempt stands, for the log when it does not stop as told. */
interface AttemptProgress {
  phase: string;
  sandbox?: () => SandboxedAssetState;
}

/**
 * Runs one attempt taken from the queue: start it (which fences out any other taker),
 * fetch its code by digest, run each asset's user code in a sandboxed child in
 * dependency order, and report. A superseded lease stops everything silently; a drain
 * deadline hands the attempt back.
 */
export class AttemptRunner {
  constructor(
    private readonly api: WorkerApiClient,
    private readonly bundles: BundleSource,
    private readonly leases: LeaseKeeper,
    private readonly worker: WorkerIdentity,
    private readonly log: Logger,
    private readonly options: AttemptRunnerOptions,
  ) {}

  async run(tenantId: string, attemptId: string): Promise<AttemptResult> {
    return inSpan(this.options.tracer, 'attempt', { 'envengine.attempt.id': attemptId }, async (span) => {
      const result = await this.runAttempt(tenantId, attemptId);
      span.setAttribute('envengine.attempt.result', result);
      if (result === 'failed') span.setStatus({ code: SpanStatusCode.ERROR });
      return result;
    });
  }

  private async runAttempt(tenantId: string, attemptId: string): Promise<AttemptResult> {
    let started;
    try {
      started = await this.api.start(tenantId, attemptId, this.worker, randomBytes(16).toString('base64url'));
    } catch (error) {
      // Taken by another worker, canceled, or not this tenant's: nothing to do.
      if (error instanceof WorkerApiError && error.final) {
        this.log.info({ attempt_id: attemptId, reason: error.message }, 'attempt not started');
        return 'refused';
      }
      throw error;
    }
    const held: HeldAttempt = { tenantId, attemptId, lease: started.lease };
    const { plan } = started;
    const abort = new AbortController();
    let stopReason: StopReason | undefined;
    const progress: AttemptProgress = { phase: 'fetching the bundle' };
    this.leases.track(
      held,
      (reason) => {
        stopReason ??= reason;
        abort.abort(reason);
      },
      () => ({ phase: progress.phase, sandbox: progress.sandbox?.() }),
    );
    const logs = new LogShipper(
      (lines) => this.api.appendLogs(held, lines),
      this.options.logFlushMs,
      (error) => this.log.warn({ attempt_id: attemptId, err: error.message }, 'log lines not sent yet'),
      { maxLines: plan.log_limits.max_lines, maxChars: plan.log_limits.max_chars },
    );
    try {
      const reports = await this.runAssets(held, plan, logs, abort.signal, progress);
      progress.phase = 'sending the last log lines';
      progress.sandbox = undefined;
      await logs.close();
      progress.phase = 'reporting the outcome';
      if (stopReason === 'superseded') return 'superseded';
      if (stopReason === 'drain') {
        await this.api.release(held, 'the worker is draining and its deadline passed');
        return 'released';
      }
      const failed = reports.find((report) => report.status === 'failed');
      await this.api.finish(held, {
        status: failed ? 'failed' : 'succeeded',
        error: failed ? `asset ${failed.key}: ${failed.error}` : null,
        assets: reports,
      });
      return failed ? 'failed' : 'succeeded';
    } catch (error) {
      if (error instanceof WorkerApiError && error.final) {
        this.log.warn({ attempt_id: attemptId, err: error.message }, 'attempt report refused: its lease no longer holds');
        return 'superseded';
      }
      throw error;
    } finally {
      await logs.close();
      this.leases.untrack(attemptId);
    }
  }

  private async runAssets(held: HeldAttempt, plan: AttemptPlan, logs: LogShipper, signal: AbortSignal, progress: AttemptProgress): Promise<AssetReport[]> {
    let bundle: HeldBundle;
    try {
      bundle = await this.bundles(plan.bundle_ref, plan.environment.id);
    } catch (error) {
      const message = reportable(logs, `could not fetch the bundle ${plan.bundle_ref}: ${(error as Error).message}`);
      logs.add(null, message);
      return plan.assets.map((asset, index) => ({ key: asset.key, status: index === 0 ? 'failed' : 'skipped', error: index === 0 ? message : null }));
    }
    try {
      return await this.runEachAsset(held, plan, logs, signal, bundle.directory, progress);
    } finally {
      // The cache may remove it again once no attempt runs from it.
      bundle.release();
    }
  }

  /** The plan's assets in order, each in a sandboxed child; after a failure the rest are skipped. */
  private async runEachAsset(held: HeldAttempt, plan: AttemptPlan, logs: LogShipper, signal: AbortSignal, bundleDir: string, progress: AttemptProgress): Promise<AssetReport[]> {
    const reports: AssetReport[] = [];
    for (const asset of plan.assets) {
      if (signal.aborted || reports.some((report) => report.status === 'failed')) {
        reports.push({ key: asset.key, status: 'skipped', error: null });
        continue;
      }
      this.leases.setAsset(held.attemptId, asset.key);
      progress.phase = `running asset ${asset.key}`;
      progress.sandbox = undefined;
      // Asked once per asset. An asset that may emit to object storage has its connection
      // asked for while its sandbox starts, so that the round trip is not on its emit's
      // path; an error waits for the emit (or read) that needs it.
      const limit = assetTimeLimit(this.options.assetTimeoutMs, asset, plan, Date.now());
      if (limit.ms <= 0) {
        const message = `asset ${asset.key} was not started: the ${limit.source} had run out`;
        logs.add(asset.key, message);
        reports.push({ key: asset.key, status: 'failed', error: message });
        continue;
      }
      let driver: Promise<StorageDriver> | undefined;
      const storage = () => (driver ??= this.storageDriver(held, plan, asset.key, logs));
      if (asset.binding_mode !== 'read_only' && storageSchemeOf(plan.environment.storage_prefix) === 's3') storage().catch(() => undefined);
      const outcome = await inSpan(this.options.tracer, 'asset', { 'envengine.asset.key': asset.key }, async (span) => {
        const ran = await runAssetInSandbox({
        bundleDir,
        entry: asset.entry,
        assetKey: asset.key,
        run: { id: plan.run_id, attempt: plan.attempt_number },
        schema: (asset.schema as DeclaredSchema | null) ?? null,
        timeoutMs: limit.ms,
        timeoutSource: limit.source,
        sandbox: this.options.sandbox,
        egress: plan.environment.egress,
        signal,
        sandboxes: this.options.sandboxes,
        watch: (state) => (progress.sandbox = state),
        // The sandbox's requests arrive as messages, outside any context: bound to the
        // asset's span, the engine calls they make are its children.
        handlers: bindToActiveContext({
          emit: () => this.emit(held, plan, asset, storage),
          read: async (key) => this.read(held, plan, asset, key, storage, logs),
          connection: async (name) => {
            const resolved = await this.api.connection(held, asset.key, name);
            // Masked before the user code has the values, so no line can carry them first.
            logs.maskSecrets(resolved.secret_settings.map((setting) => resolved.config[setting]));
            return resolved.config;
          },
          log: (message) => logs.add(asset.key, message),
        }),
        });
        span.setAttribute('envengine.asset.status', ran.status);
        if (ran.status !== 'succeeded') span.setStatus({ code: SpanStatusCode.ERROR });
        return ran;
      });
      // Its connections closed: one client per asset, never reused.
      void driver?.then((opened) => opened.close?.(), () => undefined);
      if (outcome.status === 'succeeded') {
        reports.push({ key: asset.key, status: 'succeeded', error: null });
      } else {
        // In the worker's own log too: a canceled or superseded attempt's lines are no longer stored.
        this.log.info({ attempt_id: held.attemptId, asset: asset.key, reason: outcome.reason }, 'asset stopped');
        if (outcome.unclosed) this.log.warn({ attempt_id: held.attemptId, asset: asset.key, detail: outcome.unclosed }, "asset's child did not close");
        const error = withEgressHint(outcome.error, plan.environment);
        logs.add(asset.key, `asset ${asset.key} failed: ${error}`);
        reports.push({ key: asset.key, status: 'failed', error: reportable(logs, error) });
      }
    }
    this.leases.setAsset(held.attemptId, null);
    return reports;
  }

  /** The driver for the environment's storage through this asset's binding; its keys masked in the attempt's log. */
  private async storageDriver(held: HeldAttempt, plan: AttemptPlan, assetKey: string, logs: LogShipper): Promise<StorageDriver> {
    if (storageSchemeOf(plan.environment.storage_prefix) === 'file') return storageDriverFor(plan.environment.storage_prefix);
    return this.driverOver(plan.environment.storage_prefix, await this.api.storage(held, assetKey), logs);
  }

  /** A driver for `storagePrefix` through `connection`; its keys masked in the attempt's log. */
  private driverOver(storagePrefix: string, connection: StorageConnection, logs: LogShipper): StorageDriver {
    if (connection.kind === 'file') return storageDriverFor(storagePrefix);
    logs.maskSecrets([connection.secret_access_key, connection.access_key_id]);
    // A binding's own endpoint (not the engine's store, which names none) is checked on the engine's runner.
    const guard = connection.binding !== null && !this.options.endpointGuard?.isAllowed(connection.endpoint) ? this.options.endpointGuard : undefined;
    const host = new URL(connection.endpoint).hostname.replace(/^\[|\]$/g, '');
    const literal = guard && isIP(host) ? guard.refusal(host) : null;
    if (literal) throw new Error(`Storage binding "${connection.binding}": endpoint ${literal}`);
    return storageDriverFor(storagePrefix, {
      lookup: guard?.lookup,
      endpoint: connection.endpoint,
      region: connection.region,
      forcePathStyle: connection.force_path_style,
      accessKeyId: connection.access_key_id,
      secretAccessKey: connection.secret_access_key,
      keyPrefix: connection.key_prefix,
    });
  }

  /**
   * `ctx.emit(rows)`: refused on a read_only binding before any I/O; else the Parquet file
   * the child encoded is written to a spool file as its bytes arrive, then stored, read
   * back, checked against the declared schema and recorded. The worker holds one frame of
   * bytes at a time, however many rows the asset emits.
   */
  private emit(held: HeldAttempt, plan: AttemptPlan, asset: PlannedAsset, storage: () => Promise<StorageDriver>): EmitSink {
    refuseReadOnly(asset);
    const materializationId = newId('mat');
    let opened: Promise<MaterializationUpload> | undefined;
    const stream = () =>
      (opened ??= storage().then(
        (driver) =>
          new MaterializationUpload({
            storagePrefix: plan.environment.storage_prefix,
            assetKey: asset.key,
            materializationId,
            schema: (asset.schema as DeclaredSchema | null) ?? null,
            driver,
            spoolDirectory: this.options.spoolDirectory,
            maxBytes: this.options.maxMaterializationBytes,
          }),
      ));
    // Bound to the asset's span, as the other handlers are.
    return bindToActiveContext({
      write: async (bytes: Uint8Array) => (await stream()).write(bytes),
      finish: async () => {
        const written = await (await stream()).finish();
        try {
          await this.api.recordMaterialization(held, asset.key, {
            id: materializationId,
            location: written.location,
            bytes: written.bytes,
            row_count: written.row_count,
            columns: written.columns,
          });
        } catch (error) {
          // Refused for good (the lease was superseded: canceled, or its environment deleted,
          // maybe with its data purged already), or refused by a quota (429: nothing was
          // recorded, the tenant's materialization_bytes): the file is nobody's, so it goes now.
          if (error instanceof WorkerApiError && (error.final || error.status === 429)) await (await storage()).remove(written.location).catch(() => undefined);
          throw error;
        }
      },
      abort: () => void opened?.then((open) => open.abort(), () => undefined),
    });
  }

  /**
   * `ctx.read(key)` of `reader`: the file of the upstream's latest materialization that is
   * not quarantined, for the child to decode. The worker API refuses an upstream the reader
   * does not declare in its deps (whatever a worker asks), and so does this, before the call.
   */
  private async read(held: HeldAttempt, plan: AttemptPlan, reader: PlannedAsset, assetKey: string, storage: () => Promise<StorageDriver>, logs: LogShipper): Promise<AsyncIterable<Uint8Array>> {
    if (!reader.deps.includes(assetKey)) {
      const declared = reader.deps.length === 0 ? 'declares no deps' : `declares deps ${reader.deps.map((dep) => `"${dep}"`).join(', ')}`;
      throw new Error(`ctx.read("${assetKey}") refused: asset "${reader.key}" ${declared}; an asset reads only the assets its manifest entry names in deps`);
    }
    const upstream = await this.api.upstream(held, reader.key, assetKey);
    if (!upstream) throw new Error(nothingToReadMessage(assetKey, plan.environment.name));
    // A preview's read of its parent's file: through a driver over the parent's prefix (read only, as the engine says).
    if (upstream.from) return this.driverOver(upstream.from.storage_prefix, upstream.from.storage ?? { kind: 'file' }, logs).readStream(upstream.location);
    return (await storage()).readStream(upstream.location);
  }
}

/** `ctx.read(key)` of an asset with nothing to read in this environment: what it means, and what to do. */
export function nothingToReadMessage(assetKey: string, environment: string): string {
  return `ctx.read("${assetKey}"): ${assetKey} has no materialization here yet (or only quarantined ones): run it first (envctl runs start --env ${environment} --asset ${assetKey})`;
}

/** An asset's error (and so its attempt's): at most this many characters, within the finish report's bound. */
const MAX_REPORTED_ERROR_CHARS = 4000;

/**
 * An error as the attempt reports it: every secret value resolved for the attempt masked
 * (user code may throw one, `password=` + value), and cut to a size the worker API takes.
 */
function reportable(logs: LogShipper, error: string): string {
  const masked = logs.maskedHead(error, MAX_REPORTED_ERROR_CHARS);
  return masked.cut ? `${masked.text}… (cut)` : masked.text;
}

/** `ctx.emit` on a read_only binding throws before any I/O (no keys asked for, nothing written). */
function refuseReadOnly(asset: PlannedAsset): void {
  if (asset.binding_mode === 'read_only') {
    throw new Error(`ctx.emit refused: asset "${asset.key}" is stored on binding "${asset.binding}", which is read_only`);
  }
}

/** Each of the handlers, run in the context active now (the asset's span). */
function bindToActiveContext<H extends Record<string, (...args: never[]) => unknown>>(handlers: H): H {
  const active = context.active();
  return Object.fromEntries(Object.entries(handlers).map(([name, handler]) => [name, context.bind(active, handler)])) as H;
}
