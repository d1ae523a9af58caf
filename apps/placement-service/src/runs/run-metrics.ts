import type { RecordedEvent } from '@envengine/contracts';
import type { PlacementMetrics } from '@envengine/service-metrics';

const RUN_ENDINGS = { 'run.succeeded': 'succeeded', 'run.failed': 'failed', 'run.canceled': 'canceled' } as const;

/**
 * Counts the run transitions the relay publishes: the one observer of every run made and every run's end, by
 * whatever path it came (a worker's report, the reaper, a cancel, a tear-down). Counted in
 * the relay's process: the replicas' sum is the engine's count. A batch sent again after a
 * crash between its publish and its mark is counted again (rare, and never undercounted).
 */
export function countRunEvents(metrics: PlacementMetrics, events: readonly RecordedEvent[]): void {
  for (const event of events) {
    if (event.type === 'run.queued') {
      metrics.runsStarted.inc({ trigger: (event.data as { trigger: 'manual' | 'schedule' }).trigger });
    } else if (event.type in RUN_ENDINGS) {
      const data = event.data as { trigger: 'manual' | 'schedule' };
      metrics.runsFinished.inc({ trigger: data.trigger, outcome: RUN_ENDINGS[event.type as keyof typeof RUN_ENDINGS] });
    } else if (event.type === 'attempt.lost' || event.type === 'attempt.retried') {
      const { executor } = event.data as { executor: 'local' | 'remote' };
      (event.type === 'attempt.lost' ? metrics.attemptsLost : metrics.attemptsRetried).inc({ executor });
    }
  }
}
