// The attempts as they ran, sampled from MongoDB while the soak's load goes on: an
// environment's delete removes its attempts, so the stores at the end keep only the work
// of the environments still there, and when work resumed after a fault cannot be read from
// them alone.
import type { Collection } from 'mongodb';
import type { TimedAttempt } from './work-resumed.ts';

interface AttemptRow {
  _id: string;
  tenant_id: string;
  executor: 'local' | 'remote';
  status: string;
  dispatched_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

const PROJECTION = { tenant_id: 1, executor: 1, status: 1, dispatched_at: 1, started_at: 1, finished_at: 1 } as const;

/** A minute back: a sample missed while MongoDB is down or paused (20 s at most) is caught up by the next. */
const LOOK_BACK_MS = 60_000;

export class AttemptSampler {
  private readonly seen = new Map<string, TimedAttempt>();
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<void> | undefined;

  constructor(private readonly attempts: Collection<AttemptRow>) {}

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.sample(), intervalMs);
    void this.sample();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sampling;
  }

  /** Every attempt seen, each in its latest state: those still in `attempts` (the stores at the end) as they are there now. */
  async withCurrent(attempts: Collection<AttemptRow>): Promise<TimedAttempt[]> {
    const all = new Map(this.seen);
    for (const row of await attempts.find({}, { projection: PROJECTION }).toArray()) all.set(row._id, timedAttemptOf(row));
    return [...all.values()];
  }

  private sample(): Promise<void> {
    this.sampling ??= (async () => {
      try {
        const rows = await this.attempts
          .find(
            { $or: [{ status: { $in: ['queued', 'running'] } }, { finished_at: { $gte: new Date(Date.now() - LOOK_BACK_MS) } }] },
            { projection: PROJECTION, maxTimeMS: 5_000 },
          )
          .toArray();
        for (const row of rows) this.seen.set(row._id, timedAttemptOf(row));
      } catch {
        // MongoDB down or paused: the next sample looks a minute back.
      } finally {
        this.sampling = undefined;
      }
    })();
    return this.sampling;
  }
}

function timedAttemptOf(row: Omit<AttemptRow, '_id'>): TimedAttempt {
  return {
    tenantId: row.tenant_id,
    executor: row.executor,
    status: row.status,
    dispatchedAt: row.dispatched_at.getTime(),
    startedAt: row.started_at?.getTime() ?? null,
    finishedAt: row.finished_at?.getTime() ?? null,
  };
}
