import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';

/** Prefix of every BullMQ key of the engine's attempt queues (`envengine:<queue>:…`). */
export const ATTEMPT_QUEUE_PREFIX = 'envengine';

/** The engine's own queue: `local` attempts, taken by `attempt-worker --local`. */
export const LOCAL_ATTEMPT_QUEUE = 'attempts-local';

const TENANT_ID = /^ten_[0-9a-z]{26}$/;

/** A tenant's queue: its `remote` attempts, taken by its pool. Its name ends up in an ACL key pattern, so it is checked. */
export function tenantAttemptQueue(tenantId: string): string {
  if (!TENANT_ID.test(tenantId)) throw new Error(`"${tenantId}" is not a tenant id`);
  return `attempts-${tenantId}`;
}

export function attemptQueueFor(executor: 'local' | 'remote', tenantId: string): string {
  return executor === 'local' ? LOCAL_ATTEMPT_QUEUE : tenantAttemptQueue(tenantId);
}

/** A queue payload: ids only, never secret values or user data. */
export const AttemptJob = z.strictObject({
  attempt_id: z.string().regex(/^att_[0-9a-z]{26}$/),
  run_id: z.string().regex(/^run_[0-9a-z]{26}$/),
  tenant_id: z.string().regex(TENANT_ID),
  /** 0 at first; bumped when a draining worker hands the attempt back. */
  dispatch: z.number().int().nonnegative(),
});
export type AttemptJob = z.infer<typeof AttemptJob>;

export function parseAttemptJob(data: unknown): AttemptJob {
  return AttemptJob.parse(data);
}

/**
 * The BullMQ job id of an attempt: its own id, so that adding it again while it is still
 * queued is a no-op; a hand-back gets a new one (the old job may still be finishing).
 */
export function attemptJobId(job: Pick<AttemptJob, 'attempt_id' | 'dispatch'>): string {
  return job.dispatch === 0 ? job.attempt_id : `${job.attempt_id}.${job.dispatch}`;
}

/** Adds attempts to their queues (the placement-service's side). */
export class AttemptQueueProducer {
  private readonly queues = new Map<string, Queue>();

  constructor(private readonly connection: Redis) {}

  async enqueue(job: AttemptJob, executor: 'local' | 'remote'): Promise<void> {
    await this.queue(attemptQueueFor(executor, job.tenant_id)).add('attempt', job, {
      jobId: attemptJobId(job),
      // Retries are new attempts of the run, decided by the engine: BullMQ never retries.
      attempts: 1,
      // Finished jobs are removed so that their ids are free again: the attempt row, not
      // the queue, is the record, and the reconciler may offer a queued attempt again.
      removeOnComplete: true,
      removeOnFail: true,
    });
  }

  /** Removes a job still waiting (a canceled attempt); a job already taken is refused at start instead. */
  async remove(job: Pick<AttemptJob, 'attempt_id' | 'tenant_id' | 'dispatch'>, executor: 'local' | 'remote'): Promise<void> {
    await this.queue(attemptQueueFor(executor, job.tenant_id)).remove(attemptJobId(job));
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((queue) => queue.close()));
  }

  private queue(name: string): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: this.connection, prefix: ATTEMPT_QUEUE_PREFIX });
      this.queues.set(name, queue);
    }
    return queue;
  }
}
