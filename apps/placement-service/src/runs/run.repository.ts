import { randomBytes } from 'node:crypto';
import type { ClientSession, Connection } from 'mongoose';
import type { Executor, FinishAttemptRequest, QuotaLimits, WorkerIdentity } from '@envengine/contracts';
import { newId } from '@envengine/resource-ids';
import { ApiError, notFound, quotaExceeded } from '@envengine/service-kit';
import { ENGINE_CAUSE, type EventCause, type EventOutbox } from '@envengine/event-log';
import { inTransaction, type TenantQuotas } from '@envengine/tenant-data';
import { aboutAttempt, aboutRun, runQueued } from './run-events.ts';
import type { RunAssetSpec } from './run-plan.ts';
import { ACTIVE_RUN, CANCELED_ASSETS, leaseSuperseded, newAttempt, UNFINISHED_ASSETS } from './attempt-records.ts';
import { RunTeardown, type TeardownFence } from './run-teardown.ts';
import { RunQueries } from './run-queries.ts';
import { RunSlots, type SlotFence } from './run-slots.ts';
import { ScheduledRunBatch, type TickBatchFence } from './scheduled-run-batch.ts';
import { RunnerShares, type RunnerSharePolicy } from './runner-shares.ts';
import type { AttemptAssetDocument, AttemptDocument, RunDocument } from './run.schema.ts';


const iso = (date: Date | null | undefined) => (date ? date.toISOString() : null);

/** What a worker write is checked against: the attempt is running under this lease. */
export interface LeaseCheck {
  tenantId: string;
  attemptId: string;
  lease: string;
}

export interface NewRun {
  environment: { id: string; name: string; executor: Executor };
  deployment: { id: string; bundle_ref: string };
  job: string | null;
  assets: RunAssetSpec[];
  maxAttempts: number;
  timeoutSeconds: number | null;
}

/** What run transactions need of the environment they belong to (its executor now, where a retry is placed, is the slots' too). */
export type EnvironmentFences = SlotFence & TickBatchFence & TeardownFence;

/** A run refused because its environment's tear-down has begun. */
export class EnvironmentDeletingError extends Error {
  constructor() {
    super('the environment is being deleted');
  }
}

/**
 * A run after a transition: the attempts that now need a queue add (a retry, or runs given
 * the slot it freed), and the retry if one was made. (What ended, its events say.)
 */
export interface Transition {
  attempt: AttemptDocument;
  dispatch: AttemptDocument[];
  retried: AttemptDocument | null;
}

/** What follows a failed or lost attempt: its retry, or the run's failure and the runs given its slot. */
interface AfterFailure {
  dispatch: AttemptDocument[];
  retried: AttemptDocument | null;
}


/**
 * The attempt lifecycle: runs made with their first attempt, started, leased, finished,
 * lost, canceled, handed back and retried (the reads are `RunQueries`'). Every state change
 * is a conditional update on the state it leaves (or a transaction of such updates), so
 * that a terminal state is reached once and never changes.
 */
export class RunRepository extends RunQueries {
  readonly slots: RunSlots;
  /** Runs of a batch of ticks, made in one transaction. */
  readonly scheduledRuns: ScheduledRunBatch;
  private readonly shares: RunnerShares;

  /**
   * @param environments the placement scope's environments, read and fenced inside this
   * repository's transactions.
   * @param quotas the placement scope's per-tenant quota documents (queued runs).
   * @param outbox the placement scope's events: every run transition writes its own in its transaction.
   */
  constructor(
    private readonly connection: Connection,
    private readonly environments: EnvironmentFences,
    private readonly quotas: TenantQuotas,
    private readonly outbox: EventOutbox,
  ) {
    super(connection);
    this.slots = new RunSlots(this.runs, this.attempts, environments);
    this.scheduledRuns = new ScheduledRunBatch(this.runs, this.attempts, environments, quotas, outbox);
    this.shares = new RunnerShares(connection, this.attempts);
    this.teardown = new RunTeardown(connection, this.runs, this.attempts, environments, outbox);
  }

  override async ensureIndexes(): Promise<void> {
    await Promise.all([super.ensureIndexes(), this.shares.ensureIndexes()]);
  }

  /** Gives the engine runner's free slots to waiting local attempts, fairly across tenants; they need their queue add. */
  admitToRunner(policy: RunnerSharePolicy): Promise<AttemptDocument[]> {
    return this.shares.admit(policy);
  }

  /** Gives the environment's free slots to its oldest waiting runs; their attempts need a queue add. */
  fillSlots(tenantId: string, environmentId: string): Promise<AttemptDocument[]> {
    return inTransaction(this.connection, (session) => this.slots.fill(tenantId, environmentId, session));
  }

  /**
   * The run and its first attempt, in one transaction; the attempt still needs its queue
   * add. `striped`: whether the run was admitted through an admission stripe (false: the
   * environment has none yet, or the run needed the environment's own document).
   */
  async create(tenantId: string, input: NewRun, cause: EventCause): Promise<{ run: RunDocument; attempt: AttemptDocument; striped: boolean }> {
    const now = new Date();
    const run: Omit<RunDocument, 'tenant_id'> = {
      _id: newId('run', now.getTime()),
      environment_id: input.environment.id,
      environment_name: input.environment.name,
      deployment_id: input.deployment.id,
      bundle_ref: input.deployment.bundle_ref,
      trigger: 'manual',
      schedule: null,
      schedule_tick: null,
      job: input.job,
      assets: input.assets,
      status: 'queued',
      waiting_for_slot: false,
      max_attempts: input.maxAttempts,
      timeout_seconds: input.timeoutSeconds,
      attempt_count: 1,
      inserted_at: now,
      started_at: null,
      finished_at: null,
      error: null,
    };
    // Behind the tenant's quota document: the queued-run counts below see every admission that committed before.
    return this.quotas.admission(tenantId, async (session, limits) => {
      // The environment's status read in the same transaction as the insert, through a
      // write: a tear-down that has returned admits no run after it (it waits for, or
      // aborts, this transaction).
      const admission = await this.environments.admitRun(tenantId, input.environment.id, 'manual', session);
      if (!admission.admitted) {
        if (admission.why === 'deleting') throw new EnvironmentDeletingError();
        throw notFound(`Environment "${input.environment.name}"`);
      }
      await this.checkQueuedRunQuotas(tenantId, input.environment, limits, session);
      const waiting = await this.slots.mustWait(tenantId, input.environment.id, admission.maxConcurrentRuns, session);
      const attempt = newAttempt(run._id, input.environment.id, 1, input.environment.executor, input.assets.map((asset) => asset.key), now, waiting);
      const storedRun = await this.runs.insert(tenantId, { ...run, waiting_for_slot: waiting }, { session });
      const storedAttempt = await this.attempts.insert(tenantId, attempt, { session });
      await this.outbox.record(tenantId, runQueued(storedRun, cause), session);
      return { run: storedRun, attempt: storedAttempt, striped: admission.striped };
    });
  }

  /** Refuses a run past the tenant's or the environment's queued-runs quota (runs not started yet, waiting ones too). */
  private async checkQueuedRunQuotas(tenantId: string, environment: { id: string; name: string }, limits: QuotaLimits, session: ClientSession): Promise<void> {
    const queuedInEnvironment = await this.runs.count(
      tenantId,
      { environment_id: environment.id, status: 'queued' },
      { session, limit: limits.queued_runs_per_environment },
    );
    if (queuedInEnvironment >= limits.queued_runs_per_environment) {
      throw quotaExceeded('queued_runs_per_environment', limits.queued_runs_per_environment, `Environment "${environment.name}" has ${queuedInEnvironment} runs queued already.`);
    }
    const queued = await this.runs.count(tenantId, { status: 'queued' }, { session, limit: limits.queued_runs });
    if (queued >= limits.queued_runs) throw quotaExceeded('queued_runs', limits.queued_runs, `You have ${queued} runs queued already.`);
  }

  /** Queued runs of the tenant, all told and by environment name, for `GET /quotas`. */
  async queuedRunCounts(tenantId: string): Promise<{ total: number; byEnvironment: Record<string, number> }> {
    const rows = await this.runs.aggregate<{ _id: string; count: number }>(tenantId, { status: 'queued' }, [
      { $group: { _id: '$environment_name', count: { $sum: 1 } } },
    ]);
    return { total: rows.reduce((sum, row) => sum + row.count, 0), byEnvironment: Object.fromEntries(rows.map((row) => [row._id, row.count])) };
  }

  async markEnqueued(tenantId: string, attemptId: string, dispatchSeq: number): Promise<void> {
    await this.attempts.updateOne(tenantId, { _id: attemptId, status: 'queued', dispatch_seq: dispatchSeq }, { $set: { enqueued_at: new Date() } });
  }

  /** Records the queue add of new attempts (first dispatch) still queued. */
  async markNewEnqueued(tenantId: string, attemptIds: string[]): Promise<void> {
    await this.attempts.updateMany(tenantId, { _id: { $in: attemptIds }, status: 'queued', dispatch_seq: 0 }, { $set: { enqueued_at: new Date() } });
  }

  /**
   * A worker takes a queued attempt: it gets a new lease, and the run is running. Only a
   * queued attempt can be started, so a job delivered twice (a stalled BullMQ job handed
   * to a second worker) starts once; the second worker gets 409. `executor` is the
   * caller's kind, known from its credential: a pool's worker starts only `remote`
   * attempts and the engine's runner only `local` ones; another kind's attempt is 404.
   */
  async start(tenantId: string, attemptId: string, executor: Executor, worker: WorkerIdentity, startKey: string | null, cause: EventCause): Promise<{ attempt: AttemptDocument; run: RunDocument; replayed: boolean }> {
    const now = new Date();
    const attempt = await this.attempts.findOneAndUpdate(
      tenantId,
      // An attempt waiting for a slot is not on a queue: a worker that learned its id cannot start it past the limit.
      { _id: attemptId, status: 'queued', executor, waiting_for_slot: { $ne: true } },
      {
        $set: {
          status: 'running',
          lease: randomBytes(18).toString('base64url'),
          worker: worker.name,
          worker_id: worker.id,
          started_at: now,
          last_heartbeat_at: now,
          current_asset: null,
          start_key: startKey,
        },
      },
    );
    if (!attempt) {
      // The same worker's retry of the start that took it (its answer lost on the way): the
      // lease that start was given. Only while that lease still holds, and never for a key
      // it did not send (a second delivery of the job has its own).
      const retried =
        startKey === null
          ? null
          : await this.attempts.findOne(tenantId, { _id: attemptId, status: 'running', executor, worker_id: worker.id, start_key: startKey });
      if (!retried) throw await this.refusal(tenantId, attemptId, 'is not waiting to start', executor);
      return { attempt: retried, run: (await this.findRun(tenantId, retried.run_id))!, replayed: true };
    }
    // The run starts with its first attempt's start (a retry's finds it running): that transition and its event, together.
    const run = await inTransaction(this.connection, async (session) => {
      const started = await this.runs.findOneAndUpdate(tenantId, { _id: attempt.run_id, status: 'queued' }, { $set: { status: 'running', started_at: now } }, { session });
      if (started) {
        await this.outbox.record(tenantId, { type: 'run.started', ...aboutRun(started), cause, data: { attempt: attempt.number, executor: attempt.executor, worker: worker.name } }, session);
      }
      return started;
    });
    return { attempt, run: run ?? (await this.findRun(tenantId, attempt.run_id))!, replayed: false };
  }

  /** Refuses a worker write unless the attempt is running under this lease. */
  /**
   * Counts log messages of these sizes (in order) against the attempt's character limit;
   * answers how many of them, from the first, fit and are counted. A compare-and-set on
   * the stored count, so two batches stored at once never both take the same room.
   */
  async takeLogRoom(tenantId: string, attemptId: string, sizes: readonly number[], limit: number): Promise<number> {
    const total = sizes.reduce((sum, size) => sum + size, 0);
    // The usual batch, well within the limit: counted whole in one conditional write.
    if (total <= limit) {
      const whole = await this.attempts.updateOne(tenantId, { _id: attemptId, $or: [{ log_chars: { $lte: limit - total } }, { log_chars: null }] }, { $inc: { log_chars: total } });
      if (whole.matched === 1) return sizes.length;
    }
    for (let tries = 0; tries < 5; tries += 1) {
      const attempt = await this.attempts.findOne(tenantId, { _id: attemptId }, { projection: { log_chars: 1 } });
      if (!attempt) return 0;
      const stored = attempt.log_chars ?? 0;
      let fitting = 0;
      let chars = 0;
      if (stored + total <= limit) [fitting, chars] = [sizes.length, total];
      else while (fitting < sizes.length && stored + chars + sizes[fitting]! <= limit) chars += sizes[fitting++]!;
      if (fitting === 0) return 0;
      const counted = await this.attempts.updateOne(tenantId, { _id: attemptId, log_chars: stored === 0 ? { $in: [0, null] } : stored }, { $inc: { log_chars: chars } });
      if (counted.matched === 1) return fitting;
    }
    // Five batches of the same attempt at once won every race: this one stores nothing.
    return 0;
  }

  /** Records what an asset of a running attempt read (`ctx.read`), once per read materialization; behind the same lease. */
  async recordRead({ tenantId, attemptId, lease }: LeaseCheck, read: { asset: string; upstream: string; materialization_id: string; environment: string }): Promise<void> {
    await this.attempts.updateOne(tenantId, { _id: attemptId, lease, status: 'running' }, { $addToSet: { reads: read } } as never);
  }

  async checkLease({ tenantId, attemptId, lease }: LeaseCheck): Promise<AttemptDocument> {
    const attempt = await this.attempts.findOne(tenantId, { _id: attemptId });
    if (!attempt) throw notFound(`Attempt "${attemptId}"`);
    if (attempt.status !== 'running' || attempt.lease !== lease) throw leaseSuperseded(attempt);
    return attempt;
  }

  /**
   * The attempt of a materialization's record: while the lease holds, or, once it no longer
   * does, if that lease already recorded `materializationId` as the asset's outcome (the
   * record is sent again because its answer was lost on the way). Refused otherwise, as
   * `checkLease` refuses.
   */
  async checkLeaseForRecord({ tenantId, attemptId, lease }: LeaseCheck, assetKey: string, materializationId: string): Promise<{ attempt: AttemptDocument; recorded: boolean }> {
    const attempt = await this.attempts.findOne(tenantId, { _id: attemptId });
    if (!attempt) throw notFound(`Attempt "${attemptId}"`);
    if (attempt.lease === lease) {
      if (attempt.status === 'running') return { attempt, recorded: false };
      const outcome = attempt.assets.find((asset) => asset.key === assetKey);
      if (outcome?.status === 'succeeded' && outcome.materialization_id === materializationId) return { attempt, recorded: true };
    }
    throw leaseSuperseded(attempt);
  }

  /** Renews the leases a worker holds (the attempt it works on with each); returns the attempts whose lease no longer holds. */
  async renewLeases(tenantId: string, attempts: ReadonlyArray<{ id: string; lease: string; asset: string | null }>): Promise<{ held: string[]; lost: string[] }> {
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
    return { held: renewed.filter((entry) => entry.held).map((entry) => entry.id), lost: renewed.filter((entry) => !entry.held).map((entry) => entry.id) };
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
  async finish(check: LeaseCheck, report: FinishAttemptRequest, cause: EventCause): Promise<Transition> {
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
        const run = await this.runs.findOneAndUpdate(
          check.tenantId,
          { _id: attempt.run_id, status: { $in: ACTIVE_RUN } },
          { $set: { status: 'succeeded', finished_at: new Date(), error: null } },
          { session, projection: { trigger: 1, environment_id: 1, environment_name: 1 } },
        );
        if (!run) return { attempt, dispatch: [], retried: null };
        await this.outbox.record(check.tenantId, { type: 'run.succeeded', ...aboutRun(run), cause, data: { trigger: run.trigger, attempt: attempt.number } }, session);
        return { attempt, dispatch: await this.slots.fill(check.tenantId, attempt.environment_id, session), retried: null };
      }
      return { attempt, ...(await this.retryOrFail(check.tenantId, attempt, report.error ?? 'the attempt failed', session, cause)) };
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
      return { attempt, ...(await this.retryOrFail(tenantId, attempt, attempt.error!, session, ENGINE_CAUSE, { worker: before?.worker ?? null })) };
    });
  }

  /** Cancels a run that has not finished, and its unfinished attempt; 409 once it has. `admitted`: runs given the slot it freed. */
  async cancel(tenantId: string, runId: string, cause: EventCause): Promise<{ run: RunDocument; canceled: AttemptDocument[]; admitted: AttemptDocument[] }> {
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
      await this.outbox.record(tenantId, { type: 'run.canceled', ...aboutRun(run), cause, data: { trigger: run.trigger, reason: 'request' } }, session);
      const open = await this.attempts.find(tenantId, { run_id: runId, status: { $in: ['queued', 'running'] } }, { session });
      await this.attempts.updateMany(
        tenantId,
        { run_id: runId, status: { $in: ['queued', 'running'] } },
        { $set: { status: 'canceled', finished_at: now, current_asset: null, error: 'canceled by request', ...CANCELED_ASSETS } },
        { session, arrayFilters: UNFINISHED_ASSETS },
      );
      return { run, canceled: open, admitted: await this.slots.fill(tenantId, run.environment_id, session) };
    });
  }

  /** An environment's tear-down: its runs canceled with it, then removed (run-teardown.ts). */
  readonly teardown: RunTeardown;

  /** A draining worker hands a running attempt back: it is queued again under a new job id. */
  async release(check: LeaseCheck): Promise<AttemptDocument> {
    const attempt = await this.attempts.findOneAndUpdate(
      check.tenantId,
      { _id: check.attemptId, lease: check.lease, status: 'running' },
      {
        $set: { status: 'queued', lease: null, start_key: null, worker: null, worker_id: null, started_at: null, last_heartbeat_at: null, current_asset: null, enqueued_at: null },
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

  /** Attempts queued and not started, of every tenant, by executor (the metrics' queue depth). */
  async queuedCounts(): Promise<Record<Executor, number>> {
    const [local, remote] = await Promise.all(
      (['local', 'remote'] as const).map((executor) => this.attempts.countAcrossTenants({ status: 'queued', executor })),
    );
    return { local: local!, remote: remote! };
  }

  /**
   * Queued attempts dispatched before `cutoff`, not waiting for a slot of their environment
   * nor, if local, for the runner's admission, of every tenant (the reconciler's sweep).
   */
  queuedSince(cutoff: Date, limit: number, options: { localAwaitsAdmission: boolean }): Promise<AttemptDocument[]> {
    return this.attempts.findAcrossTenants(
      {
        status: 'queued',
        dispatched_at: { $lt: cutoff },
        waiting_for_slot: { $ne: true },
        ...(options.localAwaitsAdmission ? { $or: [{ executor: 'remote' }, { admitted_at: { $ne: null } }, { enqueued_at: { $ne: null } }] } : {}),
      },
      { limit, sort: { dispatched_at: 1 } },
    );
  }

  /** A failed attempt's retry, or, once attempts are spent, the run's failure and the runs given the slot it freed. */
  private async retryOrFail(tenantId: string, failed: AttemptDocument, error: string, session: ClientSession, cause: EventCause, lost?: { worker: string | null }): Promise<AfterFailure> {
    const nothing: AfterFailure = { dispatch: [], retried: null };
    const run = await this.runs.findOne(tenantId, { _id: failed.run_id }, { session });
    if (!run || !ACTIVE_RUN.includes(run.status)) return nothing;
    if (lost) {
      await this.outbox.record(tenantId, { type: 'attempt.lost', ...aboutAttempt(failed, run), cause, data: { run_id: run._id, attempt: failed.number, executor: failed.executor, worker: lost.worker, error } }, session);
    }
    if (run.attempt_count >= run.max_attempts) {
      const ended = await this.runs.updateOne(
        tenantId,
        { _id: run._id, status: { $in: ACTIVE_RUN } },
        { $set: { status: 'failed', finished_at: new Date(), error: `attempt ${failed.number} of ${run.max_attempts}: ${error}` } },
        { session },
      );
      if (ended.matched !== 1) return nothing;
      await this.outbox.record(tenantId, { type: 'run.failed', ...aboutRun(run), cause, data: { trigger: run.trigger, attempt: failed.number, error } }, session);
      return { dispatch: await this.slots.fill(tenantId, run.environment_id, session), retried: null };
    }
    // Placed afresh: the environment's executor now, not the failed attempt's.
    const executor = await this.environments.executorOf(tenantId, run.environment_id, session);
    const earlier = await this.attempts.find(tenantId, { run_id: run._id }, { session });
    // Materialized: recorded under an earlier attempt's lease, even if its code threw after the emit (docs/design.md#runs-and-attempts).
    const materialized = new Set(
      earlier.flatMap((attempt) => attempt.assets.filter((asset) => asset.status === 'succeeded' || asset.materialization_id !== null).map((asset) => asset.key)),
    );
    const remaining = run.assets.map((asset) => asset.key).filter((key) => !materialized.has(key));
    const number = run.attempt_count + 1;
    const next = newAttempt(run._id, run.environment_id, number, executor ?? failed.executor, remaining, new Date());
    const bumped = await this.runs.updateOne(tenantId, { _id: run._id, attempt_count: run.attempt_count }, { $set: { attempt_count: number } }, { session });
    if (bumped.matched !== 1) return nothing;
    const retry = await this.attempts.insert(tenantId, next, { session });
    await this.outbox.record(
      tenantId,
      { type: 'attempt.retried', ...aboutAttempt(retry, run), cause, data: { run_id: run._id, attempt: number, executor: retry.executor, previous_error: error } },
      session,
    );
    return { dispatch: [retry], retried: retry };
  }

  private async refusal(tenantId: string, attemptId: string, why: string, executor?: Executor): Promise<ApiError> {
    const attempt = await this.attempts.findOne(tenantId, { _id: attemptId });
    if (!attempt || (executor !== undefined && attempt.executor !== executor)) return notFound(`Attempt "${attemptId}"`);
    return new ApiError('lease_superseded', `Attempt "${attemptId}" ${why} (it is ${attempt.status}).`);
  }
}

export { leaseSuperseded } from './attempt-records.ts';
