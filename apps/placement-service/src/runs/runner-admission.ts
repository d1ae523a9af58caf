import type { Logger } from '@envengine/service-kit';
import type { RunRepository } from './run.repository.ts';
import type { RunnerSharePolicy } from './runner-shares.ts';
import type { AttemptDocument } from './run.schema.ts';

/**
 * Runs the engine runner's admission (runner-shares.ts) when a slot may have freed or a
 * local attempt was made: requests made while one runs make it run once more after, so a
 * burst of new runs costs a few admissions, not one each. Each admitted attempt is handed
 * to `enqueue` (its queue add); one the queue refused is offered again by the reconciler.
 */
export class RunnerAdmission {
  /** The admission running now, and the one that runs after it for the requests made meanwhile. */
  private current: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(
    private readonly runs: Pick<RunRepository, 'admitToRunner'>,
    private readonly policy: () => Promise<RunnerSharePolicy>,
    private readonly enqueue: (attempt: AttemptDocument) => Promise<unknown>,
    private readonly log: Logger,
  ) {}

  /** Admits what the free slots allow; resolves once an admission begun after this call has ended (it never rejects). */
  request(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.current) {
      this.current = this.admitOnce().finally(() => (this.current = null));
      return this.current;
    }
    // One more after the current one, for every request made while it runs.
    this.queued = this.current.then(() => {
      this.queued = null;
      return this.request();
    });
    return this.queued;
  }

  private async admitOnce(): Promise<void> {
    try {
      const admitted = await this.runs.admitToRunner(await this.policy());
      for (const attempt of admitted) await this.enqueue(attempt);
    } catch (error) {
      // The reconciler's sweep asks again.
      this.log.warn({ err: (error as Error).message }, 'runner admission failed; it is tried again at the next sweep');
    }
  }
}
