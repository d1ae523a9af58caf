import type { AttemptQueueProducer } from '@envengine/attempt-queues';
import type { Logger } from '@envengine/service-kit';
import { context, extractTraceContext } from '@envengine/tracing';
import type { RunRepository } from './run.repository.ts';
import { RunnerAdmission } from './runner-admission.ts';
import type { RunnerSharePolicy } from './runner-shares.ts';
import type { AttemptDocument } from './run.schema.ts';

/** Whether an attempt waits, off the queue, for the engine runner's admission (it is local and has no slot yet). */
export function awaitsRunnerAdmission(attempt: Pick<AttemptDocument, 'executor' | 'admitted_at' | 'enqueued_at'>): boolean {
  return attempt.executor === 'local' && attempt.admitted_at == null && attempt.enqueued_at == null;
}

/**
 * Puts attempts on their BullMQ queue and keeps them moving when something dies.
 *
 * The database write and the queue add are two systems, so an attempt is first stored
 * `queued` (the record of truth), then added with its id as the BullMQ job id. A crash or
 * a Redis outage between the two leaves a queued attempt that the reconciler
 * (`DispatchReconciler`) offers again;
 * the job id makes a second add of a job still in the queue a no-op, and a worker can
 * start only a queued attempt, so a job delivered twice still runs once. (An outbox would
 * need the same sweep to deliver it; the attempt row already is one.)
 * The reaper (`LeaseReaper`) dispatches the retry of an attempt whose worker went silent.
 *
 * A local attempt goes to the engine runner's queue only once the runner's admission has
 * given it a slot (`RunnerAdmission`: the runner's slots shared fairly across tenants);
 * with `runnerShares` null (LOCAL_FAIR_SHARE=off) it goes at once, first come first served.
 */
export class AttemptDispatcher {
  private readonly admission: RunnerAdmission | null;

  constructor(
    private readonly runs: RunRepository,
    private readonly queues: AttemptQueueProducer,
    private readonly log: Logger,
    runnerShares: (() => Promise<RunnerSharePolicy>) | null = null,
  ) {
    this.admission = runnerShares && new RunnerAdmission(runs, runnerShares, (attempt) => this.dispatch(attempt), log);
  }

  /** Whether local attempts wait for the runner's admission before their queue add. */
  get sharesRunner(): boolean {
    return this.admission !== null;
  }

  /**
   * Adds the attempt to its queue; false when Redis refused (the reconciler retries). A
   * local attempt without a runner slot asks for an admission instead, which adds it when
   * it gets one.
   */
  async dispatch(attempt: AttemptDocument): Promise<boolean> {
    if (this.admission && awaitsRunnerAdmission(attempt)) {
      // Not awaited: the caller (a run's creation) does not wait for the runner's shares.
      void this.admission.request();
      return true;
    }
    try {
      // In the trace the attempt was made in, whoever adds it: an admission begun by another
      // request or a sweep may take it before its own request's dispatch gets here.
      const made = attempt.trace_parent ? extractTraceContext({ traceparent: attempt.trace_parent }) : context.active();
      await context.with(made, () =>
        this.queues.enqueue({ attempt_id: attempt._id, run_id: attempt.run_id, tenant_id: attempt.tenant_id, dispatch: attempt.dispatch_seq }, attempt.executor),
      );
    } catch (error) {
      this.log.warn({ attempt_id: attempt._id, err: (error as Error).message }, 'queue add failed; the reconciler will retry');
      return false;
    }
    await this.runs.markEnqueued(attempt.tenant_id, attempt._id, attempt.dispatch_seq).catch((error: Error) => {
      this.log.warn({ attempt_id: attempt._id, err: error.message }, 'could not record the queue add; it will be offered again');
    });
    return true;
  }

  /**
   * Adds new attempts (a batch of ticks' first attempts) in one go: one `addBulk` per queue
   * and one write recording the adds per tenant. Local attempts waiting for the runner's
   * admission ask for it once. When Redis refuses, the attempts stay queued and the
   * reconciler offers them again.
   */
  async dispatchNew(attempts: readonly AttemptDocument[]): Promise<void> {
    const toQueue = attempts.filter((attempt) => !(this.admission && awaitsRunnerAdmission(attempt)));
    if (toQueue.length < attempts.length) void this.admission!.request();
    if (toQueue.length === 0) return;
    try {
      await this.queues.enqueueMany(
        toQueue.map((attempt) => ({
          job: { attempt_id: attempt._id, run_id: attempt.run_id, tenant_id: attempt.tenant_id, dispatch: attempt.dispatch_seq },
          executor: attempt.executor,
        })),
      );
    } catch (error) {
      this.log.warn({ attempts: toQueue.length, err: (error as Error).message }, 'queue adds failed; the reconciler will retry');
      return;
    }
    const byTenant = new Map<string, string[]>();
    for (const attempt of toQueue) {
      const own = byTenant.get(attempt.tenant_id);
      if (own) own.push(attempt._id);
      else byTenant.set(attempt.tenant_id, [attempt._id]);
    }
    await Promise.all(
      [...byTenant].map(([tenantId, ids]) =>
        this.runs.markNewEnqueued(tenantId, ids).catch((error: Error) => {
          this.log.warn({ attempts: ids.length, err: error.message }, 'could not record the queue adds; they will be offered again');
        }),
      ),
    );
  }

  /** Adds each attempt to its queue; the reconciler retries those Redis refused. */
  async dispatchAll(attempts: AttemptDocument[]): Promise<void> {
    for (const attempt of attempts) await this.dispatch(attempt);
  }

  /** These attempts ended (finished, lost, canceled): a local one freed a runner slot, which the admission gives out. */
  ended(attempts: readonly AttemptDocument[]): void {
    if (this.admission && attempts.some((attempt) => attempt.executor === 'local')) void this.admission.request();
  }

  /** Gives out the runner's free slots (the reconciler's sweep: slots freed where no request followed, a replica that died). */
  async admitToRunner(): Promise<void> {
    await this.admission?.request();
  }

  /** Takes queued attempts out of their queue (after a cancel); a job already taken is refused at start. The runner slots they held go to others. */
  async withdraw(attempts: AttemptDocument[]): Promise<void> {
    await Promise.all(
      attempts
        .filter((attempt) => attempt.status === 'queued')
        .map((attempt) =>
          this.queues.remove({ attempt_id: attempt._id, tenant_id: attempt.tenant_id, dispatch: attempt.dispatch_seq }, attempt.executor).catch(() => undefined),
        ),
    );
    this.ended(attempts);
  }
}
