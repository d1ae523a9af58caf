import type { Logger } from '@envengine/process-kit';
import type { SweepMetrics, SweepName } from '@envengine/service-metrics';

/**
 * Runs `work` every `intervalMs`, never two at once (a slow sweep makes the next one wait
 * for the interval after it); a failed sweep is logged and the next interval tries again.
 * Each ending is counted (`envengine_sweeps_total`), so a stalled sweep shows.
 */
export class PeriodicSweep {
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly name: SweepName,
    private readonly intervalMs: number,
    private readonly work: () => Promise<unknown>,
    private readonly log: Logger,
    private readonly metrics: SweepMetrics,
  ) {
    // Its series exist from the start, so that a rate of them is 0, not "no data".
    for (const outcome of ['completed', 'failed']) metrics.sweeps.inc({ sweep: name, outcome }, 0);
  }

  start(): void {
    this.timer ??= setInterval(() => void this.runOnce(), this.intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async runOnce(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.work();
      this.metrics.sweeps.inc({ sweep: this.name, outcome: 'completed' });
    } catch (error) {
      this.metrics.sweeps.inc({ sweep: this.name, outcome: 'failed' });
      this.log.warn({ err: (error as Error).message }, `${this.name} sweep failed; next interval retries`);
    } finally {
      this.running = false;
    }
  }
}
