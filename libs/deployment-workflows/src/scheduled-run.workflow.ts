import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import { ScheduledRunInput, type ScheduledRunOutcome } from '@envengine/contracts';
import { workflowInput } from './workflow-input.ts';
import type { DeploymentActivities } from './definitions.ts';

/** Set by Temporal on every workflow a schedule starts: the tick it was started for. */
const SCHEDULED_START_TIME = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

// A local activity: one call to the placement-service, run by the worker that runs the
// tick, with no activity task to schedule, match and record in Temporal (hundreds of
// schedules tick in the same second).
const { startScheduledRun } = proxyLocalActivities<DeploymentActivities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '5 minutes',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 20 },
});

/**
 * `scheduled-<environment id>-<schedule>-<time>`: one tick of a schedule. It asks the
 * placement-service for the tick's run, which starts nothing while the environment is
 * paused or the schedule's previous run is still going (skipped and counted), and makes
 * one run per tick. The workflow ends there: holding it open for the run's length would
 * hold a worker slot per running schedule.
 */
export async function scheduledRun(raw: ScheduledRunInput): Promise<ScheduledRunOutcome> {
  const input = workflowInput(ScheduledRunInput, raw, 'scheduledRun');
  const info = workflowInfo();
  const scheduledAt: Date = info.typedSearchAttributes.get(SCHEDULED_START_TIME) ?? info.startTime;
  return startScheduledRun({ ...input, scheduledAt: scheduledAt.toISOString() });
}
