import type { ClientSession } from 'mongoose';
import type { Environment, QuotaLimits, RunStatus } from '@envengine/contracts';
import { SCHEDULE_CAUSE, type EventOutbox, type NewEvent } from '@envengine/event-log';
import { newId } from '@envengine/resource-ids';
import type { TenantQuotas, TenantScopedModel } from '@envengine/tenant-data';
import { newAttempt } from './attempt-records.ts';
import type { RunAssetSpec } from './run-plan.ts';
import type { AttemptDocument, RunDocument } from './run.schema.ts';
import { runQueued } from './run-events.ts';

const ACTIVE_RUN: RunStatus[] = ['queued', 'running'];

/** One due tick of a stored schedule, to be turned into a run. */
export interface TickRunRequest {
  /** The stored schedule's id (`<environment id>:<name>`). */
  scheduleId: string;
  environmentId: string;
  schedule: string;
  job: string;
  /** The tick's key: its fire time in the schedule's zone (what makes its run unique). */
  key: string;
  /** The outcome of the schedule's tick before this one, if any (a skip is an event only when it begins). */
  previousOutcome?: string | null;
}

/** What became of one tick. */
export type TickRunOutcome =
  /** Its run was made, now or by an earlier pass of the same tick. */
  | { result: 'created'; runId: string }
  /** The schedule's previous run is still queued or running. */
  | { result: 'overlap'; runId: string }
  /** Its environment's schedules are paused, or its tear-down has begun. */
  | { result: 'paused' }
  /** The tenant's or the environment's queued-runs quota is full. */
  | { result: 'quota' }
  /** Its environment is gone (a tear-down that raced an activation). */
  | { result: 'gone' };

/** What the run of a job executes: the environment's active deployment and the job's assets. */
export interface TickRunPlan {
  deployment: { id: string; bundle_ref: string };
  job: string | null;
  assets: RunAssetSpec[];
  maxAttempts: number;
  timeoutSeconds: number | null;
}

/** What the batch needs of the tick loop and of the run path, inside and around its transaction. */
export interface TickBatchHooks {
  /** Of these ticks, the ids of the schedules still due at the tick's time, read in the transaction (another pass may have recorded some). */
  stillDue(session: ClientSession): Promise<Set<string>>;
  /** What a run of `job` in this environment executes (its active deployment as the transaction reads it). */
  planOf(environment: Environment, job: string): Promise<TickRunPlan>;
  /** Records every tick's outcome, in the same transaction, each with its fire time as the precondition. */
  record(outcomes: Map<string, TickRunOutcome>, session: ClientSession): Promise<void>;
}

/** The environments' side of a batch, inside its transaction. */
export interface TickBatchFence {
  /** The environments as the transaction reads them. */
  findByIds(tenantId: string, ids: string[], session: ClientSession): Promise<Map<string, Environment>>;
  /**
   * Writes the admission count of each environment that admits scheduled runs (active, not
   * paused), so that a pause, a limit's change or a tear-down that commits meanwhile
   * conflicts with the batch; how many it wrote.
   */
  fenceScheduledRuns(tenantId: string, ids: string[], session: ClientSession): Promise<number>;
}

/**
 * A batch of one tenant's due ticks turned into runs in one transaction
 * (docs/design.md#schedules-pause-and-resume): behind the tenant's quota fence, the batch
 * reads its schedules (still due?), environments (paused? deleting? run limit?), unfinished
 * scheduled runs (overlap) and queued-run counts (quota) once, writes every run and first
 * attempt with one insert each, and records every tick in the same transaction. A pause, a
 * tear-down, a run limit's change, another pass of the same ticks or a manual run of the
 * tenant that commits meanwhile conflicts with it, and the batch is run again with that
 * change in view: the same guarantees as one run's creation, for hundreds of ticks at once.
 */
export class ScheduledRunBatch {
  constructor(
    private readonly runs: TenantScopedModel<RunDocument>,
    private readonly attempts: TenantScopedModel<AttemptDocument>,
    private readonly environments: TickBatchFence,
    private readonly quotas: TenantQuotas,
    private readonly outbox: EventOutbox,
  ) {}

  /** The ticks' outcomes (by schedule id; a tick no longer due has none) and the new runs' first attempts, which need their queue add. */
  async create(tenantId: string, ticks: readonly TickRunRequest[], hooks: TickBatchHooks): Promise<{ outcomes: Map<string, TickRunOutcome>; attempts: AttemptDocument[] }> {
    return this.quotas.admission(tenantId, async (session, limits) => {
      const outcomes = new Map<string, TickRunOutcome>();
      const due = await hooks.stillDue(session);
      const live = ticks.filter((tick) => due.has(tick.scheduleId));
      if (live.length === 0) return { outcomes, attempts: [] };
      const environmentIds = [...new Set(live.map((tick) => tick.environmentId))];
      // One at a time: the driver does not support concurrent operations on a transaction's session.
      const environments = await this.environments.findByIds(tenantId, environmentIds, session);
      const unfinished = await this.unfinishedScheduledRuns(tenantId, live, session);
      const earlier = await this.runsOfTicks(tenantId, live, session);
      const wanted: TickRunRequest[] = [];
      for (const tick of live) {
        const environment = environments.get(tick.environmentId);
        const made = earlier.get(tickRunKey(tick.environmentId, tick.schedule, tick.key));
        const running = unfinished.get(`${tick.environmentId}:${tick.schedule}`);
        if (!environment) outcomes.set(tick.scheduleId, { result: 'gone' });
        // A pass that made the run and died before recording the tick: the same run, not a second.
        else if (made) outcomes.set(tick.scheduleId, { result: 'created', runId: made });
        else if (environment.schedules_paused || environment.status !== 'active') outcomes.set(tick.scheduleId, { result: 'paused' });
        else if (running) outcomes.set(tick.scheduleId, { result: 'overlap', runId: running });
        else wanted.push(tick);
      }
      const made = await this.admit(tenantId, wanted, environments, limits, hooks, session, outcomes);
      await hooks.record(outcomes, session);
      await this.outbox.recordMany(tenantId, skippedTickEvents(live, outcomes, environments), session);
      return { outcomes, attempts: made };
    });
  }

  /** The runs of the wanted ticks, within quota and run limits, inserted; their outcomes set. */
  private async admit(
    tenantId: string,
    wanted: TickRunRequest[],
    environments: Map<string, Environment>,
    limits: QuotaLimits,
    hooks: TickBatchHooks,
    session: ClientSession,
    outcomes: Map<string, TickRunOutcome>,
  ): Promise<AttemptDocument[]> {
    if (wanted.length === 0) return [];
    const environmentIds = [...new Set(wanted.map((tick) => tick.environmentId))];
    // The fence first: every count below is read after it, as one run's admission does.
    const fenced = await this.environments.fenceScheduledRuns(tenantId, environmentIds, session);
    if (fenced !== environmentIds.length) throw new Error(`an environment changed during a tick batch (${fenced} of ${environmentIds.length} admitted); this tenant's part is tried again shortly`);
    const limited = environmentIds.filter((id) => environments.get(id)!.max_concurrent_runs !== null);
    const queued = await this.queuedByEnvironment(tenantId, session);
    const slots = await this.slotUse(tenantId, limited, session);
    let queuedTotal = [...queued.values()].reduce((sum, count) => sum + count, 0);
    const now = new Date();
    const runs: Array<Omit<RunDocument, 'tenant_id'>> = [];
    const attempts: Array<Omit<AttemptDocument, 'tenant_id'>> = [];
    for (const tick of wanted) {
      const environment = environments.get(tick.environmentId)!;
      const queuedHere = queued.get(tick.environmentId) ?? 0;
      if (queuedHere >= limits.queued_runs_per_environment || queuedTotal >= limits.queued_runs) {
        outcomes.set(tick.scheduleId, { result: 'quota' });
        continue;
      }
      queued.set(tick.environmentId, queuedHere + 1);
      queuedTotal += 1;
      // Under a run limit a new run waits while every slot is held or an older run waits (RunSlots.mustWait).
      let waiting = false;
      const use = slots.get(tick.environmentId);
      if (environment.max_concurrent_runs !== null && use !== undefined) {
        waiting = use.holding >= environment.max_concurrent_runs || use.waiting > 0;
        if (waiting) use.waiting += 1;
        else use.holding += 1;
      }
      const plan = await hooks.planOf(environment, tick.job);
      const run = newScheduledRun(tick, environment, plan, now, waiting);
      runs.push(run);
      attempts.push(newAttempt(run._id, environment.id, 1, environment.executor, plan.assets.map((asset) => asset.key), now, waiting));
      outcomes.set(tick.scheduleId, { result: 'created', runId: run._id });
    }
    if (runs.length === 0) return [];
    await this.runs.insertManyOwned(runs.map((doc) => ({ tenantId, doc })), { session });
    await this.attempts.insertManyOwned(attempts.map((doc) => ({ tenantId, doc })), { session });
    await this.outbox.recordMany(tenantId, runs.map((run) => runQueued(run, SCHEDULE_CAUSE)), session);
    return attempts.map((attempt) => ({ ...attempt, tenant_id: tenantId }));
  }

  /**
   * Each of these ticks' schedules' run still queued or running, by `<environment id>:<schedule>`.
   * Asked by the schedules' names, so that the index on (environment, schedule) answers it
   * and an environment's other queued runs are not read.
   */
  private async unfinishedScheduledRuns(tenantId: string, ticks: TickRunRequest[], session: ClientSession): Promise<Map<string, string>> {
    const runs = await this.runs.find(
      tenantId,
      { environment_id: { $in: [...new Set(ticks.map((tick) => tick.environmentId))] }, schedule: { $in: [...new Set(ticks.map((tick) => tick.schedule))] }, status: { $in: ACTIVE_RUN } },
      { projection: { _id: 1, environment_id: 1, schedule: 1 }, session },
    );
    return new Map(runs.map((run) => [`${run.environment_id}:${run.schedule}`, run._id]));
  }

  /**
   * Runs already made for these very ticks, by `tickRunKey`: one query of `$in`s over the
   * unique (environment, schedule, tick) index (an `$or` of one branch per tick made
   * MongoDB plan every branch: most of a 500-tick part's cost), then the pairs it does not
   * ask for dropped.
   */
  private async runsOfTicks(tenantId: string, ticks: TickRunRequest[], session: ClientSession): Promise<Map<string, string>> {
    const runs = await this.runs.find(
      tenantId,
      {
        environment_id: { $in: [...new Set(ticks.map((tick) => tick.environmentId))] },
        schedule: { $in: [...new Set(ticks.map((tick) => tick.schedule))] },
        schedule_tick: { $in: [...new Set(ticks.map((tick) => tick.key))] },
      },
      { projection: { _id: 1, environment_id: 1, schedule: 1, schedule_tick: 1 }, session },
    );
    const asked = new Set(ticks.map((tick) => tickRunKey(tick.environmentId, tick.schedule, tick.key)));
    return new Map(
      runs.map((run) => [tickRunKey(run.environment_id, run.schedule!, run.schedule_tick!), run._id] as const).filter(([key]) => asked.has(key)),
    );
  }

  /** The tenant's queued runs, by environment (what the queued-runs quotas count). */
  private async queuedByEnvironment(tenantId: string, session: ClientSession): Promise<Map<string, number>> {
    const rows = await this.runs.aggregate<{ _id: string; count: number }>(tenantId, { status: 'queued' }, [{ $group: { _id: '$environment_id', count: { $sum: 1 } } }], { session });
    return new Map(rows.map((row) => [row._id, row.count]));
  }

  /** Of environments under a run limit: runs holding a slot and runs waiting for one. */
  private async slotUse(tenantId: string, environmentIds: string[], session: ClientSession): Promise<Map<string, { holding: number; waiting: number }>> {
    const use = new Map(environmentIds.map((id) => [id, { holding: 0, waiting: 0 }]));
    if (environmentIds.length === 0) return use;
    const rows = await this.runs.aggregate<{ _id: { environment: string; waiting: boolean }; count: number }>(
      tenantId,
      { environment_id: { $in: environmentIds }, status: { $in: ACTIVE_RUN } },
      [{ $group: { _id: { environment: '$environment_id', waiting: { $and: [{ $eq: ['$waiting_for_slot', true] }, { $eq: ['$status', 'queued'] }] } }, count: { $sum: 1 } } }],
      { session },
    );
    for (const row of rows) {
      const counts = use.get(row._id.environment)!;
      if (row._id.waiting) counts.waiting += row.count;
      else counts.holding += row.count;
    }
    return use;
  }
}

function tickRunKey(environmentId: string, schedule: string, tick: string): string {
  return `${environmentId}\u0000${schedule}\u0000${tick}`;
}

function newScheduledRun(tick: TickRunRequest, environment: Environment, plan: TickRunPlan, now: Date, waiting: boolean): Omit<RunDocument, 'tenant_id'> {
  return {
    _id: newId('run', now.getTime()),
    environment_id: environment.id,
    environment_name: environment.name,
    deployment_id: plan.deployment.id,
    bundle_ref: plan.deployment.bundle_ref,
    trigger: 'schedule',
    schedule: tick.schedule,
    schedule_tick: tick.key,
    job: plan.job,
    assets: plan.assets,
    status: 'queued',
    waiting_for_slot: waiting,
    max_attempts: plan.maxAttempts,
    timeout_seconds: plan.timeoutSeconds,
    attempt_count: 1,
    inserted_at: now,
    started_at: null,
    finished_at: null,
    error: null,
  };
}

const SKIP_OUTCOMES = { paused: 'skipped_paused', overlap: 'skipped_overlap', quota: 'skipped_quota' } as const;

/**
 * The ticks that made no run, as events: what a user paging on a missed nightly run wants to
 * hear of. Only the first of a run of skips for the same reason: a per-second schedule left
 * paused (or behind a run that never ends) records one event, not one a second, so no
 * tenant's schedules can flood the relay every scope's events share.
 */
function skippedTickEvents(ticks: readonly TickRunRequest[], outcomes: ReadonlyMap<string, TickRunOutcome>, environments: ReadonlyMap<string, Environment>): Array<NewEvent<'schedule.tick_skipped'>> {
  const events: Array<NewEvent<'schedule.tick_skipped'>> = [];
  for (const tick of ticks) {
    const outcome = outcomes.get(tick.scheduleId);
    const environment = environments.get(tick.environmentId);
    if (!environment || (outcome?.result !== 'paused' && outcome?.result !== 'overlap' && outcome?.result !== 'quota')) continue;
    if (tick.previousOutcome === SKIP_OUTCOMES[outcome.result]) continue;
    events.push({
      type: 'schedule.tick_skipped',
      environment: { id: environment.id, name: environment.name },
      subject: { kind: 'schedule', id: tick.schedule },
      cause: SCHEDULE_CAUSE,
      data: { tick: tick.key, reason: outcome.result, running_run_id: outcome.result === 'overlap' ? outcome.runId : null },
    });
  }
  return events;
}
