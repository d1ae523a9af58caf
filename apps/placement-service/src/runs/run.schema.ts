import { Schema } from 'mongoose';
import type { AssetOutcomeStatus, AttemptStatus, Executor, RunStatus, RunTrigger } from '@envengine/contracts';
import type { RunAssetSpec } from './run-plan.ts';

export interface RunDocument {
  _id: string;
  tenant_id: string;
  environment_id: string;
  environment_name: string;
  deployment_id: string;
  bundle_ref: string;
  trigger: RunTrigger;
  schedule: string | null;
  /** A scheduled run's tick; unique per schedule, so a tick fired or retried twice makes one run. */
  schedule_tick: string | null;
  job: string | null;
  /** The assets with what running them needs, in dependency order (from the deployment's manifest). */
  assets: RunAssetSpec[];
  status: RunStatus;
  /** Queued behind the environment's `max_concurrent_runs`: its attempt is not on a queue yet. */
  waiting_for_slot: boolean;
  max_attempts: number;
  /** The run's time limit from its start; null (or absent on runs made before it existed): none. */
  timeout_seconds?: number | null;
  attempt_count: number;
  inserted_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  error: string | null;
}

export interface AttemptAssetDocument {
  key: string;
  status: AssetOutcomeStatus;
  materialization_id: string | null;
  error: string | null;
}

export interface AttemptDocument {
  _id: string;
  tenant_id: string;
  run_id: string;
  environment_id: string;
  number: number;
  executor: Executor;
  status: AttemptStatus;
  /** Its run waits for a slot: the attempt is kept off the queue (and out of the reconciler's sweep) until then. */
  waiting_for_slot: boolean;
  /** The worker's name, and its id (for the pool view). */
  worker: string | null;
  worker_id: string | null;
  /** Fences every worker write: a new lease on each start, so an older holder's writes are refused. */
  lease: string | null;
  /** Characters of log messages stored for it so far, counted against the attempt's log limit (absent on attempts made before the count). */
  log_chars?: number;
  /** The start's key (`StartAttemptRequest.start_key`): the same worker's retry of that start gets the same lease. */
  start_key: string | null;
  /** Bumped when a draining worker hands the attempt back, so the queue job id is new. */
  dispatch_seq: number;
  dispatched_at: Date;
  /** What its assets read through `ctx.read`, and from which environment (absent on attempts made before it was recorded). */
  reads?: Array<{ asset: string; upstream: string; materialization_id: string; environment: string }>;
  /** The W3C `traceparent` of where it was made (attempt-records.ts `newAttempt`); null untraced or made before the field. */
  trace_parent?: string | null;
  /** When the queue add was confirmed; null until then (the reconciler re-offers it). */
  enqueued_at: Date | null;
  /**
   * A `local` attempt: when the engine runner's admission gave it a slot (runner-admission.ts);
   * null while it waits for one, off the queue. A remote attempt is never held back.
   */
  admitted_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
  last_heartbeat_at: Date | null;
  current_asset: string | null;
  error: string | null;
  assets: AttemptAssetDocument[];
}

export interface LogLineDocument {
  /** `<attempt id>:<seq, zero-padded>`: sorts a run's lines by attempt, then by the worker's numbering. */
  _id: string;
  tenant_id: string;
  run_id: string;
  attempt_id: string;
  attempt: number;
  asset: string | null;
  at: Date;
  message: string;
}

export interface WorkerDocument {
  /** `<tenant id>:<executor>:<worker id>`: one registration per worker process and tenant (the local runner serves every tenant). */
  _id: string;
  tenant_id: string;
  name: string;
  executor: Executor;
  credential_id: string | null;
  concurrency: number;
  draining: boolean;
  sandbox: 'bwrap' | 'off';
  running: string[];
  started_at: Date;
  last_heartbeat_at: Date;
}

export const runSchema = new Schema<RunDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    environment_name: { type: String, required: true },
    deployment_id: { type: String, required: true },
    bundle_ref: { type: String, required: true },
    trigger: { type: String, required: true },
    schedule: { type: String, default: null },
    schedule_tick: { type: String, default: null },
    job: { type: String, default: null },
    assets: { type: Schema.Types.Mixed, required: true },
    status: { type: String, required: true },
    waiting_for_slot: { type: Boolean, default: false },
    max_attempts: { type: Number, required: true },
    timeout_seconds: { type: Number, default: null },
    attempt_count: { type: Number, required: true },
    inserted_at: { type: Date, required: true },
    started_at: { type: Date, default: null },
    finished_at: { type: Date, default: null },
    error: { type: String, default: null },
  },
  { versionKey: false, collection: 'runs' },
);
runSchema.index({ tenant_id: 1, environment_id: 1, _id: -1 });
runSchema.index({ tenant_id: 1, environment_id: 1, status: 1, _id: -1 });
runSchema.index(
  { tenant_id: 1, environment_id: 1, schedule: 1, schedule_tick: 1 },
  { unique: true, partialFilterExpression: { schedule_tick: { $type: 'string' } } },
);
// Runs waiting for a slot, oldest first (admission), and the reconciler's sweep of them across tenants.
runSchema.index({ tenant_id: 1, environment_id: 1, _id: 1 }, { partialFilterExpression: { waiting_for_slot: true } });
// The queued-runs quotas: a tenant's, and an environment's, queued runs counted at each admission.
runSchema.index({ tenant_id: 1, environment_id: 1 }, { name: 'queued_runs_quota', partialFilterExpression: { status: 'queued' } });
runSchema.index({ waiting_for_slot: 1, status: 1, _id: 1 }, { partialFilterExpression: { waiting_for_slot: true } });
// The last run of each schedule, for the schedules listing.
runSchema.index({ tenant_id: 1, environment_id: 1, schedule: 1, _id: -1 });

export const attemptSchema = new Schema<AttemptDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    run_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    number: { type: Number, required: true },
    executor: { type: String, required: true },
    status: { type: String, required: true },
    waiting_for_slot: { type: Boolean, default: false },
    worker: { type: String, default: null },
    worker_id: { type: String, default: null },
    lease: { type: String, default: null },
    start_key: { type: String, default: null },
    dispatch_seq: { type: Number, required: true },
    dispatched_at: { type: Date, required: true },
    trace_parent: { type: String, default: null },
    reads: { type: [{ _id: false, asset: String, upstream: String, materialization_id: String, environment: String }], default: undefined },
    enqueued_at: { type: Date, default: null },
    admitted_at: { type: Date, default: null },
    started_at: { type: Date, default: null },
    finished_at: { type: Date, default: null },
    last_heartbeat_at: { type: Date, default: null },
    current_asset: { type: String, default: null },
    error: { type: String, default: null },
    assets: { type: Schema.Types.Mixed, required: true },
    log_chars: { type: Number, default: 0 },
  },
  { versionKey: false, collection: 'attempts' },
);
// The engine runner's admission: local attempts holding a slot, and those waiting for one (oldest first), of every tenant.
attemptSchema.index({ executor: 1, status: 1, admitted_at: 1, dispatched_at: 1 }, { partialFilterExpression: { executor: 'local' } });
// One attempt per number per run, even if two dispatchers raced.
attemptSchema.index({ tenant_id: 1, run_id: 1, number: 1 }, { unique: true });
// The sweeps: running attempts by heartbeat age, queued ones by dispatch time.
attemptSchema.index({ status: 1, last_heartbeat_at: 1 });
attemptSchema.index({ status: 1, dispatched_at: 1 });
attemptSchema.index({ tenant_id: 1, status: 1, executor: 1 });
// An environment's attempts (its tear-down).
attemptSchema.index({ tenant_id: 1, environment_id: 1, status: 1 });

export const logLineSchema = new Schema<LogLineDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    run_id: { type: String, required: true },
    attempt_id: { type: String, required: true },
    attempt: { type: Number, required: true },
    asset: { type: String, default: null },
    at: { type: Date, required: true },
    message: { type: String, required: true },
  },
  { versionKey: false, collection: 'attempt_logs' },
);
logLineSchema.index({ tenant_id: 1, run_id: 1, _id: 1 });

export const workerSchema = new Schema<WorkerDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    name: { type: String, required: true },
    executor: { type: String, required: true },
    credential_id: { type: String, default: null },
    concurrency: { type: Number, required: true },
    draining: { type: Boolean, required: true },
    sandbox: { type: String, enum: ['bwrap', 'off'], required: true, default: 'bwrap' },
    running: { type: [String], required: true },
    started_at: { type: Date, required: true },
    last_heartbeat_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'workers' },
);
workerSchema.index({ tenant_id: 1, executor: 1, last_heartbeat_at: -1 });
// A worker silent for a day is forgotten.
workerSchema.index({ last_heartbeat_at: 1 }, { expireAfterSeconds: 24 * 3600 });
