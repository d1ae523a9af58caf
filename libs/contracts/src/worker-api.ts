import { z } from 'zod';
import { BindingMode } from './bindings.ts';
import { Egress, Executor } from './environment.ts';
import { Attempt, AttemptAssetOutcome } from './runs.ts';
import { StoredColumn } from './deployments.ts';

/**
 * The worker API (`/api/v1/worker/…`): what an attempt-worker needs and reports. Every
 * call about an attempt carries the attempt id (path) and the lease it was given at
 * start (header `x-attempt-lease`); a superseded lease is refused with 409 `lease_superseded`.
 */
export const ATTEMPT_LEASE_HEADER = 'x-attempt-lease';
/**
 * What the header may hold: 1-200 printable ASCII characters, else 422 before any lookup.
 * Any such value that is not the attempt's current lease (a stale one, or one never
 * given) is `409 lease_superseded`, after the attempt is found for the caller's tenant.
 */
export const ATTEMPT_LEASE_PATTERN = /^[\x20-\x7e]{1,200}$/;

export const WorkerIdentity = z.strictObject({
  /** Random per process, chosen by the worker. */
  id: z.string().regex(/^[A-Za-z0-9_.-]{8,100}$/, { message: 'must be 8-100 letters, digits, ".", "_" or "-"' }),
  name: z.string().min(1).max(200),
  executor: Executor,
  concurrency: z.number().int().min(1).max(1000),
  /** How the worker runs user code: `bwrap` (the OS sandbox) or `off` (Node's permission model alone). */
  sandbox: z.enum(['bwrap', 'off']),
});
export type WorkerIdentity = z.infer<typeof WorkerIdentity>;

export const StartAttemptRequest = z.strictObject({
  worker: WorkerIdentity,
  /**
   * Random per delivery of the attempt to this worker, the same on every retry of its start:
   * a start whose answer was lost, sent again with the same key by the same worker, gets
   * the same lease instead of 409. A second delivery has a key of its own and is refused.
   */
  start_key: z.string().regex(/^[A-Za-z0-9_-]{16,100}$/, { message: 'must be 16-100 letters, digits, "_" or "-"' }).optional(),
});
export type StartAttemptRequest = z.infer<typeof StartAttemptRequest>;

export const PlanColumn = z.object({ name: z.string(), type: z.string(), nullable: z.boolean() });

/** One asset an attempt runs, with what the worker needs to run it. */
export const PlannedAsset = z.object({
  key: z.string(),
  entry: z.string(),
  /** The binding its manifest entry names; null for none (the engine's own storage). */
  binding: z.string().nullable(),
  /** The binding's mode when the attempt started; `read_only` makes `ctx.emit` throw. */
  binding_mode: BindingMode.nullable(),
  deps: z.array(z.string()),
  schema: z.object({ columns: z.array(PlanColumn) }).nullable(),
  /** The manifest's `timeout_seconds` of the asset, or null. */
  timeout_seconds: z.number().int().positive().nullable().default(null),
});
export type PlannedAsset = z.infer<typeof PlannedAsset>;

export const AttemptPlan = z.object({
  run_id: z.string(),
  attempt_number: z.number().int().positive(),
  tenant_id: z.string(),
  environment: z.object({ id: z.string(), name: z.string(), storage_prefix: z.string(), egress: Egress }),
  deployment_id: z.string(),
  bundle_ref: z.string(),
  /** In dependency order; only the assets no earlier attempt of the run materialized. */
  assets: z.array(PlannedAsset),
  /**
   * What the engine keeps of the attempt's log: lines past `max_lines` (one marker line
   * beyond it aside) are not stored, and the worker cuts its log at either limit.
   */
  log_limits: z.object({ max_lines: z.number().int().positive(), max_chars: z.number().int().positive() }),
  /** The run's `timeout_seconds` and when it runs out (from the run's start), or null. */
  run_timeout: z.object({ seconds: z.number().int().positive(), deadline: z.iso.datetime() }).nullable().default(null),
});
export type AttemptPlan = z.infer<typeof AttemptPlan>;

export const AttemptStarted = z.object({ attempt_id: z.string(), lease: z.string(), plan: AttemptPlan });
export type AttemptStarted = z.infer<typeof AttemptStarted>;

export const WorkerHeartbeatRequest = z.strictObject({
  worker: WorkerIdentity,
  draining: z.boolean().default(false),
  /** The worker is exiting, having drained: it leaves the pool view now, not when its last heartbeat ages out. */
  stopped: z.boolean().default(false),
  /** Each running attempt with its lease, and the asset in progress. */
  attempts: z
    .array(z.strictObject({ id: z.string().min(1).max(100), lease: z.string().min(1).max(200), asset: z.string().nullable().default(null) }))
    .max(1000),
});
export type WorkerHeartbeatRequest = z.infer<typeof WorkerHeartbeatRequest>;

/** Attempts whose lease no longer holds (canceled, presumed lost): the worker stops them at once. */
export const WorkerHeartbeatResponse = z.object({ superseded: z.array(z.string()) });
export type WorkerHeartbeatResponse = z.infer<typeof WorkerHeartbeatResponse>;

/** The longest log message a worker may send; longer lines are cut by the worker before they are sent. */
export const MAX_LOG_MESSAGE_CHARS = 16_384;

export const AttemptLogLine = z.strictObject({
  /** Numbered by the worker from 0, so that a re-sent batch is stored once. */
  seq: z.number().int().nonnegative(),
  at: z.iso.datetime(),
  asset: z.string().max(200).nullable(),
  message: z.string().max(MAX_LOG_MESSAGE_CHARS),
});
export type AttemptLogLine = z.infer<typeof AttemptLogLine>;

export const AppendLogsRequest = z.strictObject({ lines: z.array(AttemptLogLine).min(1).max(1000) });
export type AppendLogsRequest = z.infer<typeof AppendLogsRequest>;

export const WorkerAttemptParams = z.object({ id: z.string().min(1).max(100) });
export const WorkerAssetParams = z.object({ id: z.string().min(1).max(100), key: z.string().min(1).max(200) });
export const WorkerConnectionParams = z.object({ id: z.string().min(1).max(100), name: z.string().min(1).max(63) });

export const MaterializationWritten = z.strictObject({
  /** Chosen by the worker before writing, since the file is named after it. */
  id: z.string().regex(/^mat_[0-9a-z]{26}$/, { message: 'must be a materialization id (mat_…)' }),
  location: z.string().min(1).max(2048),
  bytes: z.number().int().nonnegative(),
  row_count: z.number().int().nonnegative(),
  columns: z.array(StoredColumn),
});
export type MaterializationWritten = z.infer<typeof MaterializationWritten>;

/**
 * `GET …/upstreams/:key`: `asset` is the attempt's asset that calls `ctx.read(key)`; the
 * read is refused unless `key` is one of that asset's declared `deps`.
 */
export const UpstreamQuery = z.strictObject({ asset: z.string().min(1).max(200) });
export type UpstreamQuery = z.infer<typeof UpstreamQuery>;

/** `ctx.connection(name)`: the binding's config with its secrets resolved (audited). */
export const ResolvedConnection = z.object({
  name: z.string(),
  mode: BindingMode,
  config: z.record(z.string(), z.unknown()),
  /** The config settings that hold secret values: the worker masks those values in the attempt's log lines. */
  secret_settings: z.array(z.string()),
});
export type ResolvedConnection = z.infer<typeof ResolvedConnection>;

export const FinishAttemptRequest = z.strictObject({
  status: z.enum(['succeeded', 'failed']),
  error: z.string().max(8192).nullable().default(null),
  assets: z.array(AttemptAssetOutcome.pick({ key: true, status: true, error: true })).max(500),
});
export type FinishAttemptRequest = z.infer<typeof FinishAttemptRequest>;

export const AttemptFinished = Attempt;

/** A draining worker gives back an attempt it could not finish in time: it is queued again. */
export const ReleaseAttemptRequest = z.strictObject({ reason: z.string().max(500).default('worker is shutting down') });

/** `ctx.connection(name)` of one asset of the attempt: only the binding that asset declares resolves. */
export const ConnectionRequest = z.strictObject({ asset: z.string().min(1).max(200) });
export type ConnectionRequest = z.infer<typeof ConnectionRequest>;

/** `POST …/storage`: where one asset of the attempt writes and reads (`ctx.emit`, `ctx.read`). */
export const StorageRequest = ConnectionRequest;
export type StorageRequest = ConnectionRequest;

/**
 * How a worker reaches the environment's storage for one asset: nothing more for
 * `file://`; for `s3://` the asset's binding (`endpoint`, `region`, `force_path_style`,
 * keys from its `secret_refs`, resolved through the audited resolution), or keys the engine
 * issues to its own store when the binding names no endpoint. `key_prefix` goes before
 * every object key (the engine's store keeps each tenant under its own); the worker masks
 * `secret_access_key` in log lines like any resolved secret.
 */
export const StorageConnection = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('file') }),
  z.object({
    kind: z.literal('s3'),
    endpoint: z.url(),
    region: z.string().min(1),
    force_path_style: z.boolean(),
    access_key_id: z.string().min(1),
    secret_access_key: z.string().min(1),
    key_prefix: z.string(),
    /** The binding it came from, or null for the engine's own store. */
    binding: z.string().nullable(),
  }),
]);
export type StorageConnection = z.infer<typeof StorageConnection>;

/** Where an upstream was read from when not the reader's own environment (a preview's parent). */
export const UpstreamSource = z.object({
  environment: z.string(),
  storage_prefix: z.string(),
  storage: StorageConnection.optional(),
});
export type UpstreamSource = z.infer<typeof UpstreamSource>;

/** `ctx.read(key)`: where the asset's latest non-quarantined rows are, or null. */
export const UpstreamLocation = z.object({
  materialization_id: z.string(),
  location: z.string(),
  row_count: z.number().int().nonnegative(),
  /**
   * Where it was read from when not the reader's own environment: a preview's parent
   * (docs/design.md#previews-promotion-and-diffs). Its storage prefix, and for object
   * storage a read-only connection to it; absent for the reader's own.
   */
  from: UpstreamSource.optional(),
}).nullable();
export type UpstreamLocation = z.infer<typeof UpstreamLocation>;

/**
 * How an attempt-worker process ends when it cannot work (docs/operations.md): what
 * `envctl worker start` and a process supervisor branch on. EX_NOPERM and EX_CONFIG of sysexits.
 */
export const WORKER_EXIT_CODES = {
  /** The pool credential was refused (revoked, or never issued) by the worker API or Redis. */
  credentialRefused: 77,
  /**
   * The worker cannot start as configured here: a setting missing or wrong, a Node.js
   * other than 24, or an OS sandbox that does not start (bubblewrap, user namespaces…).
   */
  configuration: 78,
} as const;
