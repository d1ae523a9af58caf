import { Queue, type Telemetry } from 'bullmq';
import type { RedisConnection } from '@envengine/redis-connections';
import { AttemptJob, TENANT_ID_PATTERN } from '@envengine/contracts';

/** Prefix of every BullMQ key of the engine's attempt queues (`envengine:{<queue>}:…`). */
export const ATTEMPT_QUEUE_PREFIX = 'envengine';

/**
 * The BullMQ name of an attempt queue: its name in braces, a Redis Cluster hash tag, so
 * that every key of one queue (`envengine:{attempts-<tenant>}:wait`, `…:active`, each
 * job's hash) lies in one slot, as BullMQ's scripts, which touch several keys of a queue
 * at once, need on Redis Cluster. The queue's own name (`attempts-<tenant>`, a pool
 * credential's `queue`) stays without them.
 */
export function attemptQueueKeyName(queue: string): string {
  if (!isAttemptQueueName(queue)) throw new Error(`"${queue}" is not an attempt queue`);
  return `{${queue}}`;
}

/** Every Redis key of one attempt queue: `envengine:{<queue>}:*` (an ACL key pattern; braces are not special in it). */
export function attemptQueueKeyPattern(queue: string): string {
  return `${attemptQueueKeyBase(queue)}*`;
}

/** What every Redis key of one attempt queue starts with, `envengine:{<queue>}:` (BullMQ's `toKey('')`, its scripts' key prefix). */
export function attemptQueueKeyBase(queue: string): string {
  return `${ATTEMPT_QUEUE_PREFIX}:${attemptQueueKeyName(queue)}:`;
}

/** The attempt queue a Redis key belongs to (`envengine:{<queue>}:…`), or undefined for any other key. */
export function attemptQueueOfKey(key: string): string | undefined {
  const head = `${ATTEMPT_QUEUE_PREFIX}:{`;
  if (!key.startsWith(head)) return undefined;
  const close = key.indexOf('}:', head.length);
  if (close < 0) return undefined;
  const queue = key.slice(head.length, close);
  return isAttemptQueueName(queue) ? queue : undefined;
}

/** The engine's own queue: `local` attempts, taken by `attempt-worker --local`. */
export const LOCAL_ATTEMPT_QUEUE = 'attempts-local';

export type AttemptExecutor = 'local' | 'remote';

const TENANT_ID = TENANT_ID_PATTERN;
const TENANT_QUEUE = /^attempts-(ten_[0-9a-z]{26})$/;

/** A tenant's queue: its `remote` attempts, taken by its pool. Its name ends up in an ACL key pattern, so it is checked. */
export function tenantAttemptQueue(tenantId: string): string {
  if (!TENANT_ID.test(tenantId)) throw new Error(`"${tenantId}" is not a tenant id`);
  return `attempts-${tenantId}`;
}

export function attemptQueueFor(executor: AttemptExecutor, tenantId: string): string {
  return executor === 'local' ? LOCAL_ATTEMPT_QUEUE : tenantAttemptQueue(tenantId);
}

/** True for the engine's queue and for a tenant's queue, nothing else. */
export function isAttemptQueueName(name: string): boolean {
  return name === LOCAL_ATTEMPT_QUEUE || TENANT_QUEUE.test(name);
}

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

/** Entries kept in each attempt queue's BullMQ event stream (trimmed as each is added). */
export const ATTEMPT_QUEUE_EVENTS_MAX_LEN = 1000;

/** Every BullMQ job id `attemptJobId` makes: an attempt id, and a hand-back's dispatch number after a dot. */
export const ATTEMPT_JOB_ID_PATTERN = /^att_[0-9a-z]{26}(?:\.[1-9][0-9]{0,8})?$/;

export interface AttemptQueueCounts {
  waiting: number;
  active: number;
}

/**
 * Adds attempts to their queues (the placement-service's side), over the one connection it
 * is given (never closed here). One BullMQ `Queue` per queue name, made on first use.
 */
export class AttemptQueueProducer {
  private readonly queues = new Map<string, Queue>();

  /** `telemetry` (tracing on): each add is a producer span whose context travels in the job to its consumer. */
  constructor(
    private readonly connection: RedisConnection,
    private readonly telemetry?: Telemetry,
  ) {}

  /** Adds the attempt's job (checked against `AttemptJob` first); returns its job id. */
  async enqueue(job: AttemptJob, executor: AttemptExecutor): Promise<string> {
    const data = parseAttemptJob(job);
    const jobId = attemptJobId(data);
    await this.queue(attemptQueueFor(executor, data.tenant_id)).add('attempt', data, {
      jobId,
      // Retries are new attempts of the run, decided by the engine: BullMQ never retries.
      attempts: 1,
      // Finished jobs are removed so that their ids are free again: BullMQ ignores an add
      // whose id still exists, even a failed one, and the attempt row (not the queue) is the
      // record; the reconciler may offer a queued attempt again under the same id.
      removeOnComplete: true,
      removeOnFail: true,
    });
    return jobId;
  }

  /**
   * Adds many attempts' jobs (each checked against `AttemptJob` first): one BullMQ
   * `addBulk` per queue, the queues at once. Returns the job ids, in order.
   */
  async enqueueMany(entries: ReadonlyArray<{ job: AttemptJob; executor: AttemptExecutor }>): Promise<string[]> {
    const byQueue = new Map<string, Array<{ name: string; data: AttemptJob; opts: { jobId: string; attempts: number; removeOnComplete: boolean; removeOnFail: boolean } }>>();
    const ids = entries.map(({ job, executor }) => {
      const data = parseAttemptJob(job);
      const jobId = attemptJobId(data);
      const queue = attemptQueueFor(executor, data.tenant_id);
      const jobs = byQueue.get(queue) ?? [];
      // The same options as `enqueue`'s, for the same reasons.
      jobs.push({ name: 'attempt', data, opts: { jobId, attempts: 1, removeOnComplete: true, removeOnFail: true } });
      byQueue.set(queue, jobs);
      return jobId;
    });
    await Promise.all([...byQueue].map(([queue, jobs]) => this.queue(queue).addBulk(jobs)));
    return ids;
  }

  /**
   * Takes a canceled attempt's job out of its queue. True when no worker will get it from
   * the queue (removed now, or not there); false when a worker already holds it (its lock):
   * a job already taken is refused when it starts instead.
   */
  async remove(job: Pick<AttemptJob, 'attempt_id' | 'tenant_id' | 'dispatch'>, executor: AttemptExecutor): Promise<boolean> {
    return (await this.queue(attemptQueueFor(executor, job.tenant_id)).remove(attemptJobId(job))) === 1;
  }

  /** Jobs waiting to be taken and jobs being worked on, in one queue. */
  async counts(queueName: string): Promise<AttemptQueueCounts> {
    if (!isAttemptQueueName(queueName)) throw new Error(`"${queueName}" is not an attempt queue`);
    const counts = await this.queue(queueName).getJobCounts('wait', 'active');
    return { waiting: counts['wait'] ?? 0, active: counts['active'] ?? 0 };
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((queue) => queue.close()));
    this.queues.clear();
  }

  private queue(name: string): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(attemptQueueKeyName(name), {
        connection: this.connection,
        prefix: ATTEMPT_QUEUE_PREFIX,
        telemetry: this.telemetry,
        // Nothing reads a queue's event stream but a benchmark, live: 1,000 entries (BullMQ's default is 10,000) bound what a pool's finished jobs leave in it.
        streams: { events: { maxLen: ATTEMPT_QUEUE_EVENTS_MAX_LEN } },
      });
      this.queues.set(name, queue);
    }
    return queue;
  }
}
