import { PeriodicSweep, type Logger } from '@envengine/service-kit';
import type { PlacementMetrics } from '@envengine/service-metrics';
import type { AttemptDispatcher } from './attempt-dispatcher.ts';
import type { RunRepository } from './run.repository.ts';

/**
 * The reconciler: queued attempts older than one interval are offered to their queue
 * again. A crash or a Redis outage between an attempt's write and its queue add leaves it
 * queued with no job; a job still in the queue makes the second add a no-op (its id is
 * the attempt's), so offering again is always safe.
 */
export class DispatchReconciler {
  private readonly sweep: PeriodicSweep;

  constructor(
    private readonly runs: RunRepository,
    private readonly dispatcher: AttemptDispatcher,
    log: Logger,
    private readonly intervalMs: number,
    metrics: PlacementMetrics,
  ) {
    this.sweep = new PeriodicSweep('reconcile', intervalMs, () => this.reconcileOnce(), log, metrics);
  }

  start(): void {
    this.sweep.start();
  }

  stop(): void {
    this.sweep.stop();
  }

  /**
   * Offers queued attempts older than one interval to their queue again, gives free
   * slots to runs waiting for one (a slot freed by a transaction whose admission raced a
   * new waiting run), and gives out the engine runner's free slots; how many attempts
   * were added (not counting the runner's admissions).
   */
  async reconcileOnce(): Promise<number> {
    const cutoff = new Date(Date.now() - this.intervalMs);
    const queued = await this.runs.queuedSince(cutoff, 500, { localAwaitsAdmission: this.dispatcher.sharesRunner });
    let offered = 0;
    for (const attempt of queued) if (await this.dispatcher.dispatch(attempt)) offered += 1;
    for (const { tenantId, environmentId } of await this.runs.slots.environmentsWaiting(500)) {
      const admitted = await this.runs.fillSlots(tenantId, environmentId);
      for (const attempt of admitted) if (await this.dispatcher.dispatch(attempt)) offered += 1;
    }
    await this.dispatcher.admitToRunner();
    return offered;
  }
}
