import type { PlacementMetrics } from '@envengine/service-metrics';
import { PeriodicSweep, type Logger } from '@envengine/service-kit';
import type { AttemptDispatcher } from './attempt-dispatcher.ts';
import type { RunRepository } from './run.repository.ts';

/**
 * The reaper: a running attempt whose worker has not heartbeated for a lease TTL is marked
 * `lost` (a heartbeat that arrives meanwhile wins: the update is conditional on the lease
 * and the last heartbeat it saw), then retried while the run has attempts left.
 */
export class LeaseReaper {
  private readonly startedAt = Date.now();
  private readonly sweep: PeriodicSweep;

  constructor(
    private readonly runs: RunRepository,
    private readonly dispatcher: AttemptDispatcher,
    private readonly log: Logger,
    private readonly leaseTtlMs: number,
    private readonly metrics: PlacementMetrics,
  ) {
    this.sweep = new PeriodicSweep('reap', Math.max(100, Math.min(1_000, Math.floor(leaseTtlMs / 3))), () => this.reapOnce(), log, metrics);
  }

  start(): void {
    this.sweep.start();
  }

  stop(): void {
    this.sweep.stop();
  }

  /** Marks attempts whose lease ran out `lost` and dispatches their retries; how many. */
  async reapOnce(): Promise<number> {
    // Heartbeats sent while this service was down (a restart) were not the workers'
    // fault: no lease is judged before a full TTL has passed since it came up.
    if (Date.now() - this.startedAt < this.leaseTtlMs) return 0;
    const cutoff = new Date(Date.now() - this.leaseTtlMs);
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
      await this.dispatcher.dispatchAll(transition.dispatch);
      this.dispatcher.ended([transition.attempt]);
    }
    return lost;
  }
}
