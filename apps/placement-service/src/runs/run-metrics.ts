import type { PlacementMetrics } from '@envengine/service-metrics';
import type { Transition } from './run.repository.ts';

/** Counts what a transition did: the run's end, a retry made, an attempt lost. */
export function countTransition(metrics: PlacementMetrics, transition: Transition, lost = false): void {
  if (lost) metrics.attemptsLost.inc({ executor: transition.attempt.executor });
  if (transition.ended) metrics.runsFinished.inc({ trigger: transition.ended.trigger, outcome: transition.ended.outcome });
  if (transition.retried) metrics.attemptsRetried.inc({ executor: transition.retried.executor });
}
