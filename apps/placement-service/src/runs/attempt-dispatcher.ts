import type { AttemptQueueProducer } from '@envengine/attempt-queues';
import type { Logger } from '@envengine/service-kit';
import type { RunRepository } from './run.repository.ts';
import type { AttemptDocument } from './run.schema.ts';

export interface DispatcherOptions {
  /** A running attempt without a heartbeat for this long is `lost`. */
  leaseTtlMs: number;
  /** How often (and after how long) a queued attempt is offered to its queue again. */
  reconcileIntervalMs: number;
}

/**
 * Puts attempts on their BullMQ queue and keeps them moving when something dies.
 *
 * The database write and the queue add are two systems, so an attempt is first stored
 * `queued` (the record of truth), then added with its id as the BullMQ job id. A crash or
 * a Redis outage between the two leaves a queued attempt that the reconciler offers again;
 * the job id makes a second add of a job still in the queue a no-op, and a worker can
 * start only a queued attempt, so a job delivered twice still runs once. (An outbox would
 * need the same sweep to deliver it; the attempt row already is one.)
 *
 * The reaper marks running attempts whose worker stopped heartbeating `lost` and
 * dispatches the retry.
 */
export class AttemptDispatcher {
  private timers: NodeJS.Timeout[] = [];
  private readonly startedAt = Date.now();
  private sweeping = { reap: false, reconcile: false };

  constructor(
    private readonly runs: RunRepository,
    private readonly queues: AttemptQueueProducer,
    private readonly log: Logger,
    private readonly options: DispatcherOptions,
  ) {}

  /** Adds the attempt to its queue; false when Redis refused (the reconciler retries). */
  async dispatch(attempt: AttemptDocument): Promise<boolean> {
    try {
      await this.queues.enqueue(
        { attempt_id: attempt._id, run_id: attempt.run_id, tenant_id: attempt.tenant_id, dispatch: attempt.dispatch_seq },
        attempt.executor,
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

  /** Takes queued attempts out of their queue (after a cancel); a job already taken is refused at start. */
  async withdraw(attempts: AttemptDocument[]): Promise<void> {
    await Promise.all(
      attempts
        .filter((attempt) => attempt.status === 'queued')
        .map((attempt) =>
          this.queues.remove({ attempt_id: attempt._id, tenant_id: attempt.tenant_id, dispatch: attempt.dispatch_seq }, attempt.executor).catch(() => undefined),
        ),
    );
  }

  start(): void {
    const reapEvery = Math.max(100, Math.min(1_000, Math.floor(this.options.leaseTtlMs / 3)));
    this.timers.push(setInterval(() => void this.sweep('reap', () => this.reapOnce()), reapEvery));
    this.timers.push(setInterval(() => void this.sweep('reconcile', () => this.reconcileOnce()), this.options.reconcileIntervalMs));
  }

  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
  }

  /** Marks attempts whose lease ran out `lost` and dispatches their retries. */
  async reapOnce(): Promise<number> {
    // Heartbeats sent while this service was down (a restart) were not the workers'
    // fault: no lease is judged before a full TTL has passed since it came up.
    if (Date.now() - this.startedAt < this.options.leaseTtlMs) return 0;
    const cutoff = new Date(Date.now() - this.options.leaseTtlMs);
    const silent = await this.runs.silentAttempts(cutoff, 200);
    let lost = 0;
    for (const attempt of silent) {
      const transition = await this.runs.markLost(attempt.tenant_id, attempt._id, attempt.lease!, cutoff);
      if (!transition) continue;
      lost += 1;
      this.log.warn(
        { attempt_id: attempt._id, run_id: attempt.run_id, worker: attempt.worker, last_heartbeat_at: attempt.last_heartbeat_at },
        'attempt lost: its worker stopped heartbeating',
      );
      if (transition.dispatch) await this.dispatch(transition.dispatch);
    }
    return lost;
  }

  /** Offers queued attempts older than one interval to their queue again (a no-op for jobs still there). */
  async reconcileOnce(): Promise<number> {
    const cutoff = new Date(Date.now() - this.options.reconcileIntervalMs);
    const queued = await this.runs.queuedSince(cutoff, 500);
    let offered = 0;
    for (const attempt of queued) if (await this.dispatch(attempt)) offered += 1;
    return offered;
  }

  private async sweep(name: 'reap' | 'reconcile', work: () => Promise<number>): Promise<void> {
    if (this.sweeping[name]) return;
    this.sweeping[name] = true;
    try {
      await work();
    } catch (error) {
      this.log.warn({ err: (error as Error).message }, `${name} sweep failed; next interval retries`);
    } finally {
      this.sweeping[name] = false;
    }
  }
}
