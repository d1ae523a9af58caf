import { randomBytes } from 'node:crypto';
import type { ClientSession, Connection } from 'mongoose';
import type {
  AppendLogsRequest,
  Attempt,
  AttemptLogLine,
  Executor,
  FinishAttemptRequest,
  Run,
  RunListQuery,
  RunLogLine,
  RunOrigin,
  RunStatus,
  WorkerIdentity,
} from '@envengine/contracts';
import { newId } from '@envengine/resource-ids';
import { ApiError, notFound } from '@envengine/service-kit';
import { inTransaction, TenantScopedModel } from '@envengine/tenant-data';
import type { RunAssetSpec } from './run-plan.ts';
import {
  attemptSchema,
  logLineSchema,
  runSchema,
  workerSchema,
  type AttemptAssetDocument,
  type AttemptDocument,
  type LogLineDocument,
  type RunDocument,
  type WorkerDocument,
} from './run.schema.ts';

const ACTIVE_RUN: RunStatus[] = ['queued', 'running'];
const LOG_SEQ_DIGITS = 10;

const iso = (date: Date | null | undefined) => (date ? date.toISOString() : null);

export function toAttempt(doc: AttemptDocument): Attempt {
  return {
    id: doc._id,
    run_id: doc.run_id,
    number: doc.number,
    executor: doc.executor,
    status: doc.status,
    worker: doc.worker,
    dispatched_at: doc.dispatched_at.toISOString(),
    started_at: iso(doc.started_at),
    finished_at: iso(doc.finished_at),
    last_heartbeat_at: iso(doc.last_heartbeat_at),
    error: doc.error,
    assets: doc.assets.map((asset) => ({ ...asset })),
  };
}

export function toRun(doc: RunDocument, attempts: AttemptDocument[], waitingForWorker: boolean): Run {
  return {
    id: doc._id,
    environment_id: doc.environment_id,
    deployment_id: doc.deployment_id,
    trigger: doc.trigger,
    schedule: doc.schedule,
    job: doc.job,
    assets: doc.assets.map((asset) => asset.key),
    status: doc.status,
    max_attempts: doc.max_attempts,
    attempts: attempts.sort((a, b) => a.number - b.number).map(toAttempt),
    waiting_for_worker: waitingForWorker,
    inserted_at: doc.inserted_at.toISOString(),
    started_at: iso(doc.started_at),
    finished_at: iso(doc.finished_at),
    error: doc.error,
  };
}

/** What a worker write is checked against: the attempt is running under this lease. */
export interface LeaseCheck {
  tenantId: string;
  attemptId: string;
  lease: string;
}

export interface NewRun {
  environment: { id: string; name: string; executor: Executor };
  deployment: { id: string; bundle_ref: string };
  origin: RunOrigin;
  job: string | null;
  assets: RunAssetSpec[];
  maxAttempts: number;
}

/** What run transactions need of the environment they belong to. */
export interface EnvironmentFences {
  /** The environment's executor now, where a retry is placed. */
  executorOf(tenantId: string, environmentId: string, session: ClientSession): Promise<Executor | undefined>;
  /** False when its schedules are paused; otherwise a write that a concurrent pause conflicts with. */
  admitScheduledRun(tenantId: string, environmentId: string, session: ClientSession): Promise<boolean>;
}

/** A schedule's tick that reached the run's transaction after its environment's schedules were paused. */
export class SchedulesPausedError extends Error {
  constructor() {
    super('the environment\'s schedules are paused');
  }
}

/** A run after a transition, and the attempt that now needs a queue add (a retry), if any. */
export interface Transition {
  attempt: AttemptDocument;
  dispatch: AttemptDocument | null;
}

/**
 * Runs, attempts, their log lines and the workers that report on them. Every state change
 * is a conditional update on the state it leaves (or a transaction of such updates), so
 * that a terminal state is reached once and never changes.
 */
export class RunRepository {
  private readonly runs: TenantScopedModel<RunDocument>;
  private readonly attempts: TenantScopedModel<AttemptDocument>;
  private readonly logs: TenantScopedModel<LogLineDocument>;
  private readonly workers: TenantScopedModel<WorkerDocument>;

  /**
   * @param environments the placement scope's environments, read and fenced inside this
   * repository's transactions.
   */
  constructor(
    private readonly connection: Connection,
    private readonly environments: EnvironmentFences,
  ) {
    this.runs = TenantScopedModel.of(connection, 'Run', runSchema);
    this.attempts = TenantScopedModel.of(connection, 'Attempt', attemptSchema);
    this.logs = TenantScopedModel.of(connection, 'AttemptLogLine', logLineSchema);
    this.workers = TenantScopedModel.of(connection, 'Worker', workerSchema);
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([this.runs.ensureIndexes(), this.attempts.ensureIndexes(), this.logs.ensureIndexes(), this.workers.ensureIndexes()]);
  }

  /** The run and its first attempt, in one transaction; the attempt still needs its queue add. */
  async create(tenantId: string, input: NewRun): Promise<{ run: RunDocument; attempt: AttemptDocument }> {
    const now = new Date();
    const run: Omit<RunDocument, 'tenant_id'> = {
      _id: newId('run', now.getTime()),
      environment_id: input.environment.id,
      environment_name: input.environment.name,
      deployment_id: input.deployment.id,
      bundle_ref: input.deployment.bundle_ref,
      trigger: input.origin.trigger,
      schedule: input.origin.schedule,
      schedule_tick: input.origin.tick,
      job: input.job,
      assets: input.assets,
      status: 'queued',
      max_attempts: input.maxAttempts,
      attempt_count: 1,
      inserted_at: now,
      started_at: null,
      finished_at: null,
      error: null,
    };
    const attempt = newAttempt(run._id, input.environment.id, 1, input.environment.executor, input.assets.map((asset) => asset.key), now);
    return inTransaction(this.connection, async (session) => {
      // The pause flag read in the same transaction as the insert, through a write: a pause
      // that has returned admits no tick after it (it waits for, or aborts, this transaction).
      if (input.origin.trigger === 'schedule' && !(await this.environments.admitScheduledRun(tenantId, input.environment.id, session))) {
        throw new SchedulesPausedError();
      }
      const storedRun = await this.runs.insert(tenantId, run, { session });
      const storedAttempt = await this.attempts.insert(tenantId, attempt, { session });
      return { run: storedRun, attempt: storedAttempt };
    });
  }

  /** The run a schedule's tick already made, if any. */
  async findScheduledRun(tenantId: string, environmentId: string, schedule: string, tick: string): Promise<RunDocument | undefined> {
    return (await this.runs.findOne(tenantId, { environment_id: environmentId, schedule, schedule_tick: tick })) ?? undefined;
  }

  /** The schedule's run that is still queued or running, if any (its newest). */
  async unfinishedScheduledRun(tenantId: string, environmentId: string, schedule: string): Promise<RunDocument | undefined> {
    const [run] = await this.runs.find(
      tenantId,
      { environment_id: environmentId, schedule, status: { $in: ['queued', 'running'] } },
      { sort: { _id: -1 }, limit: 1 },
    );
    return run;
  }

  /** The newest run of each named schedule of the environment. */
  async lastScheduledRuns(tenantId: string, environmentId: string, schedules: string[]): Promise<Map<string, string>> {
    const last = await Promise.all(
      schedules.map(async (schedule) => {
        const [run] = await this.runs.find(tenantId, { environment_id: environmentId, schedule }, { sort: { _id: -1 }, limit: 1, projection: { _id: 1 } });
        return [schedule, run?._id] as const;
      }),
    );
    return new Map(last.filter((entry): entry is readonly [string, string] => entry[1] !== undefined));
  }

  async markEnqueued(tenantId: string, attemptId: string, dispatchSeq: number): Promise<void> {
    await this.attempts.updateOne(tenantId, { _id: attemptId, status: 'queued', dispatch_seq: dispatchSeq }, { $set: { enqueued_at: new Date() } });
  }

  async findRun(tenantId: string, runId: string): Promise<RunDocument | undefined> {
    return (await this.runs.findOne(tenantId, { _id: runId })) ?? undefined;
  }

  attemptsOf(tenantId: string, runIds: string[]): Promise<AttemptDocument[]> {
    return this.attempts.find(tenantId, { run_id: { $in: runIds } });
  }

  listRuns(tenantId: string, environmentId: string, query: RunListQuery): Promise<RunDocument[]> {
    return this.runs.find(
      tenantId,
      {
        environment_id: environmentId,
        ...(query.status ? { status: query.status } : {}),
        ...(query.before ? { _id: { $lt: query.before } } : {}),
      },
      { sort: { _id: -1 }, limit: query.limit },
    );
  }

  /** Whether a `remote` worker of the tenant that takes attempts (not draining) has reported within `livenessMs`. */
  async hasLiveRemoteWorker(tenantId: string, livenessMs: number): Promise<boolean> {
    const [worker] = await this.workers.find(
      tenantId,
      { executor: 'remote', draining: false, last_heartbeat_at: { $gte: new Date(Date.now() - livenessMs) } },
      { limit: 1, projection: { _id: 1 } },
    );
    return worker !== undefined;
  }

  liveWorkers(tenantId: string, executor: Executor, livenessMs: number): Promise<WorkerDocument[]> {
    return this.workers.find(
      tenantId,
      { executor, last_heartbeat_at: { $gte: new Date(Date.now() - livenessMs) } },
      { sort: { last_heartbeat_at: -1 }, limit: 500 },
    );
  }

  async attemptCounts(tenantId: string, executor: Executor): Promise<{ queued: number; running: number }> {
    const rows = await this.attempts.aggregate<{ _id: string; count: number }>(
      tenantId,
      { status: { $in: ['queued', 'running'] }, executor },
      [{ $group: { _id: '$status', count: { $sum: 1 } } }],
    );
    const count = (status: string) => rows.find((row) => row._id === status)?.count ?? 0;
    return { queued: count('queued'), running: count('running') };
  }

  /**
   * A worker takes a queued attempt: it gets a new lease, and the run is running. Only a
   * queued attempt can be started, so a job delivered twice (a stalled BullMQ job handed
   * to a second worker) starts once; the second worker gets 409. `executor` is the
   * caller's kind, known from its credential: a pool's worker starts only `remote`
   * attempts and the engine's runner only `local` ones; another kind's attempt is 404.
   */
  async start(tenantId: string, attemptId: string, executor: Executor, worker: WorkerIdentity): Promise<{ attempt: AttemptDocument; run: RunDocument }> {
    const now = new Date();
    const attempt = await this.attempts.findOneAndUpdate(
      tenantId,
      { _id: attemptId, status: 'queued', executor },
      {
        $set: {
          status: 'running',
          lease: randomBytes(18).toString('base64url'),
          worker: worker.name,
          worker_id: worker.id,
          started_at: now,
          last_heartbeat_at: now,
          current_asset: null,
        },
      },
    );
    if (!attempt) throw await this.refusal(tenantId, attemptId, 'is not waiting to start', executor);
    const run = await this.runs.findOneAndUpdate(tenantId, { _id: attempt.run_id, status: 'queued' }, { $set: { status: 'running', started_at: now } });
    return { attempt, run: run ?? (await this.findRun(tenantId, attempt.run_id))! };
  }

  /** Refuses a worker write unless the attempt is running under this lease. */
  async checkLease({ tenantId, attemptId, lease }: LeaseCheck): Promise<AttemptDocument> {
    const attempt = await this.attempts.findOne(tenantId, { _id: attemptId });
    if (!attempt) throw notFound(`Attempt "${attemptId}"`);
    if (attempt.status !== 'running' || attempt.lease !== lease) throw leaseSuperseded(attempt);
    return attempt;
  }

  /** Renews the leases a worker holds; returns the attempts whose lease no longer holds. */
  async heartbeat(
    tenantId: string,
    worker: WorkerIdentity & { credentialId: string | null; draining: boolean },
    attempts: ReadonlyArray<{ id: string; lease: string; asset: string | null }>,
  ): Promise<string[]> {
    const now = new Date();
    const renewed = await Promise.all(
      attempts.map(async (held) => {
        const result = await this.attempts.updateOne(
          tenantId,
          { _id: held.id, lease: held.lease, status: 'running' },
          { $set: { last_heartbeat_at: now, current_asset: held.asset } },
        );
        return { id: held.id, held: result.matched === 1 };
      }),
    );
    await this.workers.updateOne(
      tenantId,
      { _id: `${tenantId}:${worker.executor}:${worker.id}` },
      {
        $set: {
          name: worker.name,
          executor: worker.executor,
          credential_id: worker.credentialId,
          concurrency: worker.concurrency,
          draining: worker.draining,
          sandbox: worker.sandbox,
          running: renewed.filter((entry) => entry.held).map((entry) => entry.id),
          last_heartbeat_at: now,
        },
        $setOnInsert: { started_at: now },
      },
      { upsert: true },
    );
    return renewed.filter((entry) => !entry.held).map((entry) => entry.id);
  }

  /** Stores a batch of log lines once each (a re-sent batch is ignored line by line). */
  async appendLogs(attempt: AttemptDocument, request: AppendLogsRequest): Promise<void> {
    const docs = request.lines.map((line: AttemptLogLine) => ({
      tenantId: attempt.tenant_id,
      doc: {
        _id: `${attempt._id}:${String(line.seq).padStart(LOG_SEQ_DIGITS, '0')}`,
        run_id: attempt.run_id,
        attempt_id: attempt._id,
        attempt: attempt.number,
        asset: line.asset,
        at: new Date(line.at),
        message: line.message,
      },
    }));
    try {
      await this.logs.insertManyOwned(docs);
    } catch (error) {
      // Duplicates of lines already stored are expected on a retry; anything else is not.
      const writeErrors = (error as { writeErrors?: Array<{ code?: number; err?: { code?: number } }> }).writeErrors;
      if (!writeErrors || !writeErrors.every((entry) => (entry.code ?? entry.err?.code) === 11000)) throw error;
    }
  }

  async logLines(tenantId: string, runId: string, after: string | undefined, limit: number): Promise<RunLogLine[]> {
    const docs = await this.logs.find(tenantId, { run_id: runId, ...(after ? { _id: { $gt: after } } : {}) }, { sort: { _id: 1 }, limit });
    return docs.map((doc) => ({
      cursor: doc._id,
      attempt_id: doc.attempt_id,
      attempt: doc.attempt,
      asset: doc.asset,
      at: doc.at.toISOString(),
      message: doc.message,
    }));
  }

  /** Records an asset's outcome on the attempt while the lease holds; whether it did. */
  async setAssetOutcome(check: LeaseCheck, outcome: AttemptAssetDocument): Promise<boolean> {
    const result = await this.attempts.updateOne(
      check.tenantId,
      { _id: check.attemptId, lease: check.lease, status: 'running', 'assets.key': outcome.key },
      { $set: { 'assets.$': outcome } },
    );
    return result.matched === 1;
  }

  /**
   * The worker's final report. On failure the run gets a new attempt while attempts
   * remain (placed afresh, for the assets no attempt has materialized), else it fails.
   */
  async finish(check: LeaseCheck, report: FinishAttemptRequest): Promise<Transition> {
    return inTransaction(this.connection, async (session) => {
      const current = await this.attempts.findOne(check.tenantId, { _id: check.attemptId }, { session });
      if (!current) throw notFound(`Attempt "${check.attemptId}"`);
      const reported = new Map(report.assets.map((asset) => [asset.key, asset]));
      const assets = current.assets.map((asset) => {
        const outcome = reported.get(asset.key);
        return outcome ? { ...asset, status: outcome.status, error: outcome.error } : asset;
      });
      const attempt = await this.attempts.findOneAndUpdate(
        check.tenantId,
        { _id: check.attemptId, lease: check.lease, status: 'running' },
        { $set: { status: report.status, error: report.error, finished_at: new Date(), current_asset: null, assets } },
        { session },
      );
      if (!attempt) throw leaseSuperseded(current);
      if (report.status === 'succeeded') {
        await this.runs.updateOne(
          check.tenantId,
          { _id: attempt.run_id, status: { $in: ACTIVE_RUN } },
          { $set: { status: 'succeeded', finished_at: new Date(), error: null } },
          { session },
        );
        return { attempt, dispatch: null };
      }
      const dispatch = await this.retryOrFail(check.tenantId, attempt, report.error ?? 'the attempt failed', session);
      return { attempt, dispatch };
    });
  }

  /**
   * The reaper's verdict on an attempt whose worker went silent: `lost`, with its last
   * heartbeat in the error, if the lease is still the one seen (a heartbeat that arrived
   * meanwhile wins), then retried or failed like a failure.
   */
  async markLost(tenantId: string, attemptId: string, lease: string, cutoff: Date): Promise<Transition | undefined> {
    return inTransaction(this.connection, async (session) => {
      const before = await this.attempts.findOne(tenantId, { _id: attemptId }, { session });
      const attempt = await this.attempts.findOneAndUpdate(
        tenantId,
        { _id: attemptId, lease, status: 'running', last_heartbeat_at: { $lt: cutoff } },
        {
          $set: {
            status: 'lost',
            finished_at: new Date(),
            current_asset: null,
            error: `worker ${before?.worker ?? '(unknown)'} stopped reporting; last heartbeat at ${iso(before?.last_heartbeat_at) ?? 'never'}`,
          },
        },
        { session },
      );
      if (!attempt) return undefined;
      const dispatch = await this.retryOrFail(tenantId, attempt, attempt.error!, session);
      return { attempt, dispatch };
    });
  }

  /** Cancels a run that has not finished, and its unfinished attempt; 409 once it has. */
  async cancel(tenantId: string, runId: string): Promise<{ run: RunDocument; canceled: AttemptDocument[] }> {
    return inTransaction(this.connection, async (session) => {
      const now = new Date();
      const run = await this.runs.findOneAndUpdate(
        tenantId,
        { _id: runId, status: { $in: ACTIVE_RUN } },
        { $set: { status: 'canceled', finished_at: now, error: 'canceled by request' } },
        { session },
      );
      if (!run) {
        const existing = await this.runs.findOne(tenantId, { _id: runId }, { session });
        if (!existing) throw notFound(`Run "${runId}"`);
        throw new ApiError('run_finished', `Run "${runId}" has already finished (${existing.status}).`);
      }
      const open = await this.attempts.find(tenantId, { run_id: runId, status: { $in: ['queued', 'running'] } }, { session });
      await this.attempts.updateMany(
        tenantId,
        { run_id: runId, status: { $in: ['queued', 'running'] } },
        { $set: { status: 'canceled', finished_at: now, current_asset: null, error: 'canceled by request' } },
        { session },
      );
      return { run, canceled: open };
    });
  }

  /** A draining worker hands a running attempt back: it is queued again under a new job id. */
  async release(check: LeaseCheck): Promise<AttemptDocument> {
    const attempt = await this.attempts.findOneAndUpdate(
      check.tenantId,
      { _id: check.attemptId, lease: check.lease, status: 'running' },
      {
        $set: { status: 'queued', lease: null, worker: null, worker_id: null, started_at: null, last_heartbeat_at: null, current_asset: null, enqueued_at: null },
        $inc: { dispatch_seq: 1 },
      },
    );
    if (!attempt) throw await this.refusal(check.tenantId, check.attemptId, 'is not running under this lease');
    return attempt;
  }

  /** Running attempts whose last heartbeat is older than `cutoff`, of every tenant (the reaper's sweep). */
  silentAttempts(cutoff: Date, limit: number): Promise<AttemptDocument[]> {
    return this.attempts.findAcrossTenants({ status: 'running', last_heartbeat_at: { $lt: cutoff } }, { limit });
  }

  /** Queued attempts dispatched before `cutoff`, of every tenant (the reconciler's sweep). */
  queuedSince(cutoff: Date, limit: number): Promise<AttemptDocument[]> {
    return this.attempts.findAcrossTenants({ status: 'queued', dispatched_at: { $lt: cutoff } }, { limit, sort: { dispatched_at: 1 } });
  }

  private async retryOrFail(tenantId: string, failed: AttemptDocument, error: string, session: ClientSession): Promise<AttemptDocument | null> {
    const run = await this.runs.findOne(tenantId, { _id: failed.run_id }, { session });
    if (!run || !ACTIVE_RUN.includes(run.status)) return null;
    if (run.attempt_count >= run.max_attempts) {
      await this.runs.updateOne(
        tenantId,
        { _id: run._id, status: { $in: ACTIVE_RUN } },
        { $set: { status: 'failed', finished_at: new Date(), error: `attempt ${failed.number} of ${run.max_attempts}: ${error}` } },
        { session },
      );
      return null;
    }
    // Placed afresh: the environment's executor now, not the failed attempt's.
    const executor = await this.environments.executorOf(tenantId, run.environment_id, session);
    const earlier = await this.attempts.find(tenantId, { run_id: run._id }, { session });
    const materialized = new Set(earlier.flatMap((attempt) => attempt.assets.filter((asset) => asset.status === 'succeeded').map((asset) => asset.key)));
    const remaining = run.assets.map((asset) => asset.key).filter((key) => !materialized.has(key));
    const number = run.attempt_count + 1;
    const next = newAttempt(run._id, run.environment_id, number, executor ?? failed.executor, remaining, new Date());
    const bumped = await this.runs.updateOne(tenantId, { _id: run._id, attempt_count: run.attempt_count }, { $set: { attempt_count: number } }, { session });
    if (bumped.matched !== 1) return null;
    return this.attempts.insert(tenantId, next, { session });
  }

  private async refusal(tenantId: string, attemptId: string, why: string, executor?: Executor): Promise<ApiError> {
    const attempt = await this.attempts.findOne(tenantId, { _id: attemptId });
    if (!attempt || (executor !== undefined && attempt.executor !== executor)) return notFound(`Attempt "${attemptId}"`);
    return new ApiError('lease_superseded', `Attempt "${attemptId}" ${why} (it is ${attempt.status}).`);
  }
}

function newAttempt(runId: string, environmentId: string, number: number, executor: Executor, assetKeys: string[], now: Date): Omit<AttemptDocument, 'tenant_id'> {
  return {
    _id: newId('att', now.getTime()),
    run_id: runId,
    environment_id: environmentId,
    number,
    executor,
    status: 'queued',
    worker: null,
    worker_id: null,
    lease: null,
    dispatch_seq: 0,
    dispatched_at: now,
    enqueued_at: null,
    started_at: null,
    finished_at: null,
    last_heartbeat_at: null,
    current_asset: null,
    error: null,
    assets: assetKeys.map((key) => ({ key, status: 'pending', materialization_id: null, error: null })),
  };
}

export function leaseSuperseded(attempt: AttemptDocument): ApiError {
  return new ApiError(
    'lease_superseded',
    attempt.status === 'running'
      ? `Attempt "${attempt._id}" is held under a newer lease; this worker's writes are refused.`
      : `Attempt "${attempt._id}" is ${attempt.status}; this worker's writes are refused.`,
  );
}
