import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { DeploymentActivities, ScheduledRunInput, ScheduledRunResult } from './definitions.ts';

/** Set by Temporal on every workflow a schedule starts: the tick it was started for. */
const SCHEDULED_START_TIME = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

const { startScheduledRun } = proxyActivities<DeploymentActivities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '5 minutes',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 20 },
});

const { awaitRunEnd } = proxyActivities<DeploymentActivities>({
  // A run may take hours; the heartbeat finds a dead worker within a minute.
  startToCloseTimeout: '7 days',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 50 },
});

/**
 * `scheduled-<environment id>-<schedule>-<time>`: one tick of a schedule. It starts the
 * tick's run through the placement-service (which refuses while the environment is paused
 * and makes one run per tick), then stays open until the run ends, so that Temporal's
 * overlap policy (skip) sees a tick that comes while the run is still going.
 */
export async function scheduledRun(input: ScheduledRunInput): Promise<ScheduledRunResult> {
  const info = workflowInfo();
  const scheduledAt: Date = info.typedSearchAttributes.get(SCHEDULED_START_TIME) ?? info.startTime;
  const started = await startScheduledRun({ ...input, scheduledAt: scheduledAt.toISOString() });
  if (started.outcome !== 'started' || started.run_id === null) return { ...started, status: null };
  const status = await awaitRunEnd({ tenantId: input.tenantId, runId: started.run_id });
  return { ...started, status };
}
