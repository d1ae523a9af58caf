import type { RedisConnection } from '@envengine/redis-connections';
import { attemptQueueKeyBase } from './attempt-queues.ts';
import type { PoolWriteBudget } from './pool-gate-policy.ts';

/**
 * Every key a pool's scripts may touch besides its jobs' (the gate pins them to these
 * names): BullMQ's queue keys, and the metrics keys `moveToFinished` names.
 */
const QUEUE_KEY_SUFFIXES = [
  '', 'active', 'wait', 'waiting-children', 'paused', 'id', 'delayed', 'prioritized', 'stalled-check', 'completed', 'failed',
  'stalled', 'repeat', 'limiter', 'meta', 'events', 'pc', 'marker', 'de',
  'metrics:completed', 'metrics:completed:data', 'metrics:failed', 'metrics:failed:data',
];

/** Active jobs measured (their hashes and locks) per measurement: a pool's concurrency is far below. */
const MAX_ACTIVE_MEASURED = 256;

export interface PoolMemoryBudgetOptions {
  /** The engine's own connection (the pool users have no MEMORY). */
  redis: RedisConnection;
  /** Bytes one pool's queue may hold in Redis (`POOL_REDIS_MEMORY_BYTES`). */
  bytesPerPool: number;
  /** How old a measurement may be when a write asks: older, the queue is measured again (the write goes by the last one meanwhile). */
  measureIntervalMs: number;
  /** Past the budget, a write whose arguments are at most this many bytes still passes, so a pool can finish its jobs (and the event stream trims itself). */
  smallWriteBytes?: number;
  log: { warn(obj: object, msg: string): void };
}

interface QueueUse {
  measured: number;
  measuredAt: number;
  /** Argument bytes of the writes passed since the measurement began: what they may have added, at most (plus each key's overhead). */
  since: number;
  measuring: boolean;
}

/**
 * Each pool's Redis memory budget: what its queue's keys hold, by `MEMORY USAGE` of each
 * (BullMQ's fixed queue keys and its running jobs' hashes and locks), measured again when a
 * write comes and the last measurement is older than `measureIntervalMs`; between
 * measurements, each write passed counts its arguments' bytes on top. Past the budget a
 * write of more than `smallWriteBytes` is refused. Per placement-service replica: each
 * counts the writes it passes, and every one measures the same keys.
 */
export class PoolMemoryBudget implements PoolWriteBudget {
  private readonly queues = new Map<string, QueueUse>();
  private readonly smallWriteBytes: number;

  constructor(private readonly options: PoolMemoryBudgetOptions) {
    this.smallWriteBytes = options.smallWriteBytes ?? 4096;
  }

  refusal(queue: string, bytes: number): string | undefined {
    let use = this.queues.get(queue);
    if (!use) {
      use = { measured: 0, measuredAt: 0, since: 0, measuring: false };
      this.queues.set(queue, use);
    }
    if (!use.measuring && Date.now() - use.measuredAt >= this.options.measureIntervalMs) void this.measure(queue, use);
    const estimate = use.measured + use.since;
    if (bytes > this.smallWriteBytes && estimate + bytes > this.options.bytesPerPool) {
      return `the pool's queue holds about ${estimate} bytes in Redis and its budget is ${this.options.bytesPerPool} (POOL_REDIS_MEMORY_BYTES): a write of ${bytes} bytes is refused (writes of at most ${this.smallWriteBytes} still pass)`;
    }
    use.since += bytes;
    return undefined;
  }

  /** What the queue holds now, as last measured (tests; `undefined` before its first write). */
  used(queue: string): number | undefined {
    const use = this.queues.get(queue);
    return use && use.measured + use.since;
  }

  /** Measures the queue now and waits for it (tests, and the first write's measurement). */
  async measureNow(queue: string): Promise<number> {
    let use = this.queues.get(queue);
    if (!use) {
      use = { measured: 0, measuredAt: 0, since: 0, measuring: false };
      this.queues.set(queue, use);
    }
    await this.measure(queue, use);
    return use.measured + use.since;
  }

  private async measure(queue: string, use: QueueUse): Promise<void> {
    use.measuring = true;
    const startedSince = use.since;
    try {
      const base = attemptQueueKeyBase(queue);
      const redis = this.options.redis;
      const active = (await redis.lrange(`${base}active`, 0, MAX_ACTIVE_MEASURED - 1)) as string[];
      const keys = [...QUEUE_KEY_SUFFIXES.map((suffix) => `${base}${suffix}`), ...active.flatMap((id) => [`${base}${id}`, `${base}${id}:lock`])];
      const pipeline = redis.pipeline();
      for (const key of keys) pipeline.call('MEMORY', 'USAGE', key);
      const results = (await pipeline.exec()) ?? [];
      let bytes = 0;
      for (const [error, value] of results) if (!error && typeof value === 'number') bytes += value;
      use.measured = bytes;
      // The writes passed while it measured may not be in it: they still count, the earlier ones are in it.
      use.since -= startedSince;
      use.measuredAt = Date.now();
    } catch (error) {
      this.options.log.warn({ queue, err: (error as Error).message }, "could not measure a pool's Redis memory; its last measurement stands");
      use.measuredAt = Date.now();
    } finally {
      use.measuring = false;
    }
  }
}
