import type { ClientSession } from 'mongoose';
import type { TenantScopedModel } from '@envengine/tenant-data';
import type { Executor } from '@envengine/contracts';
import type { AttemptDocument, RunDocument } from './run.schema.ts';
import { ACTIVE_RUN } from './attempt-records.ts';


/** What admission needs of the environment, inside the caller's transaction. */
export interface SlotFence {
  /**
   * Writes the environment's admission count (so that two admissions, a PATCH of the limit
   * or a tear-down conflict instead of passing each other) and answers its run limit;
   * not admitted while the environment is deleting or gone.
   */
  admitRun(
    tenantId: string,
    environmentId: string,
    trigger: 'manual' | 'slot',
    session: ClientSession,
  ): Promise<{ admitted: true; maxConcurrentRuns: number | null; striped: boolean } | { admitted: false; why: 'deleting' | 'missing' }>;
  /** The environment's run limit as the transaction sees it; null for none. */
  limitOf(tenantId: string, environmentId: string, session: ClientSession): Promise<number | null>;
  /** The environment's executor as the transaction sees it: where an attempt dispatched now is placed. */
  executorOf(tenantId: string, environmentId: string, session: ClientSession): Promise<Executor | undefined>;
}

/**
 * An environment's `max_concurrent_runs` (docs/design.md#environment-lifecycle). A run
 * holds a slot from the moment its attempt is handed to a queue until it is terminal; a
 * run created while every slot is held, or while older runs wait, waits too, its attempt
 * kept off the queue. The count is of stored runs, in the transaction that changes them,
 * so it holds across replicas and restarts (there is no counter to drift), and the
 * environment's admission count is written by each admission, so two of them conflict and
 * one is run again with the other's outcome in view.
 */
export class RunSlots {
  constructor(
    private readonly runs: TenantScopedModel<RunDocument>,
    private readonly attempts: TenantScopedModel<AttemptDocument>,
    private readonly fence: SlotFence,
  ) {}

  /** Whether a new run under `limit` must wait: every slot is held, or an older run waits already. */
  async mustWait(tenantId: string, environmentId: string, limit: number | null, session: ClientSession): Promise<boolean> {
    if (limit === null) return false;
    // One at a time: the driver does not support concurrent operations on a transaction's session.
    const holding = await this.runs.count(tenantId, { environment_id: environmentId, status: { $in: ACTIVE_RUN }, waiting_for_slot: { $ne: true } }, { session });
    if (holding >= limit) return true;
    return (await this.runs.count(tenantId, { environment_id: environmentId, status: 'queued', waiting_for_slot: true }, { session })) > 0;
  }

  /**
   * Gives free slots to the oldest waiting runs of the environment; returns their attempts,
   * which now need their queue add. Called in the transaction that ended a run, after a
   * change of the limit, and by the reconciler's sweep.
   */
  async fill(tenantId: string, environmentId: string, session: ClientSession): Promise<AttemptDocument[]> {
    const limit = await this.fence.limitOf(tenantId, environmentId, session);
    const waitingFilter = { environment_id: environmentId, status: 'queued' as const, waiting_for_slot: true };
    // Without a limit no run starts to wait, so only runs left waiting by a removed limit are let go.
    if (limit === null && (await this.runs.count(tenantId, waitingFilter, { session })) === 0) return [];
    // Under a limit the fence is written first, whether or not a run waits: a run created
    // meanwhile (which writes it too) conflicts with this transaction, which then sees it.
    const admission = await this.fence.admitRun(tenantId, environmentId, 'slot', session);
    if (!admission.admitted) return [];
    const anyWaiting = await this.runs.count(tenantId, waitingFilter, { session });
    if (anyWaiting === 0) return [];
    const holding = await this.runs.count(tenantId, { environment_id: environmentId, status: { $in: ACTIVE_RUN }, waiting_for_slot: { $ne: true } }, { session });
    const free = limit === null ? anyWaiting : limit - holding;
    if (free <= 0) return [];
    const next = await this.runs.find(
      tenantId,
      { environment_id: environmentId, status: 'queued', waiting_for_slot: true },
      { sort: { _id: 1 }, limit: free, projection: { _id: 1 }, session },
    );
    const runIds = next.map((run) => run._id);
    const now = new Date();
    // An attempt's executor is fixed when it is dispatched
    // (docs/design.md#runs-and-attempts): a placement changed while it waited places it, as
    // it does every attempt dispatched after it.
    const executor = await this.fence.executorOf(tenantId, environmentId, session);
    await this.runs.updateMany(tenantId, { _id: { $in: runIds }, waiting_for_slot: true }, { $set: { waiting_for_slot: false } }, { session });
    // Dispatched now: the reconciler counts its wait for a queue add from here.
    await this.attempts.updateMany(
      tenantId,
      { run_id: { $in: runIds }, status: 'queued', waiting_for_slot: true },
      { $set: { waiting_for_slot: false, dispatched_at: now, ...(executor ? { executor } : {}) } },
      { session },
    );
    return this.attempts.find(tenantId, { run_id: { $in: runIds }, status: 'queued' }, { session });
  }

  /** Where the sweep of waiting runs goes on from: a page at a time, so that no tenant's waiting runs hide another's. */
  private sweptUpTo = '';

  /**
   * Environments with runs waiting for a slot, of every tenant (the reconciler's sweep): the
   * next page of waiting runs by id after the last one swept, starting over at the end.
   */
  async environmentsWaiting(limit: number): Promise<Array<{ tenantId: string; environmentId: string }>> {
    const runs = await this.runs.findAcrossTenants(
      { waiting_for_slot: true, status: 'queued', _id: { $gt: this.sweptUpTo } },
      { limit, sort: { _id: 1 }, projection: { _id: 1, tenant_id: 1, environment_id: 1 } },
    );
    this.sweptUpTo = runs.length < limit ? '' : runs.at(-1)!._id;
    const unique = new Map(runs.map((run) => [`${run.tenant_id}/${run.environment_id}`, { tenantId: run.tenant_id, environmentId: run.environment_id }]));
    return [...unique.values()];
  }
}
