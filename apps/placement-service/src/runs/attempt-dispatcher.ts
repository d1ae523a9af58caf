import type { AttemptQueueProducer } from '@envengine/attempt-queues';
import type { Logger } from '@envengine/service-kit';
import type { RunRepository } from './run.repository.ts';
import type { AttemptDocument } from './run.schema.ts';

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
 */
export class AttemptDispatcher {
  constructor(
    private readonly runs: RunRepository,
    private readonly queues: AttemptQueueProducer,
    private readonly log: Logger,
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

  /** Adds each attempt to its queue; the reconciler retries those Redis refused. */
  async dispatchAll(attempts: AttemptDocument[]): Promise<void> {
    for (const attempt of attempts) await this.dispatch(attempt);
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
}
