import { ActivityFailure, condition, continueAsNew, setHandler, upsertMemo, workflowInfo, type ActivityOptions } from '@temporalio/workflow';
import type { TickShardResult } from '@envengine/contracts';
import { ScheduleTicksInput } from '@envengine/contracts/workflow-inputs';
import { scopeActivities } from './scope-queues.ts';
import { workflowInput } from './workflow-input.ts';
import type { ScheduleTickActivities } from './definitions.ts';
import { schedulesChanged } from './lifecycle-signals.ts';

// A pass answers within its budget (20 s) on a healthy placement-service; a pass that
// fails is tried again soon, and a loop never gives up (the cap only bounds one call).
const PASS_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 20 },
};


/** The loop looks at its shard at least this often, even with nothing due (a signal lost in flight costs at most this). */
const MAX_SLEEP_MS = 60_000;
/** After a pass that failed every retry, the loop waits this long before the next. */
const FAILED_PASS_PAUSE_MS = 10_000;
/** Passes per run of the workflow before it continues as new, keeping its history short. */
const PASSES_PER_RUN = 200;

/**
 * `schedule-ticks-<shard>`: one of a fixed number of long-running loops that tick the stored
 * schedules (docs/design.md#schedules-pause-and-resume). It sleeps on a durable timer until
 * its shard's earliest fire time, then has the placement-service make one pass, which ticks
 * every schedule due then in batches and answers the next earliest time. A change to the
 * shard's schedules (an activation, a resume) wakes it early by signal. Each pass's size and
 * outcomes are in its activity's result and in the workflow's memo, in the Temporal UI.
 */
export async function scheduleTicks(raw: ScheduleTicksInput): Promise<void> {
  const input = workflowInput(ScheduleTicksInput, raw, 'scheduleTicks');
  // On the placement scope's queue (scope-queues.ts): a pass whose placement-service died is tried again after 10 s, not after its minute.
  const { tickSchedules } = scopeActivities<ScheduleTickActivities>('placement', PASS_OPTIONS);
  let changed = false;
  setHandler(schedulesChanged, () => {
    changed = true;
  });
  let passes = input.passes;
  for (let pass = 0; pass < PASSES_PER_RUN && !workflowInfo().continueAsNewSuggested; pass++) {
    changed = false;
    let result: TickShardResult;
    try {
      result = await tickSchedules({ shard: input.shard });
    } catch (error) {
      // Every retry of the pass failed (the placement-service or MongoDB down for minutes):
      // the loop outlives it and tries again, or its shard would never tick again.
      if (!(error instanceof ActivityFailure)) throw error;
      await condition(() => changed, FAILED_PASS_PAUSE_MS);
      continue;
    }
    passes += 1;
    if (result.ticked > 0) upsertMemo({ passes, last_pass: { ticked: result.ticked, batches: result.batches, outcomes: result.outcomes } });
    const wait = result.next_due_at === null ? MAX_SLEEP_MS : Math.min(MAX_SLEEP_MS, Date.parse(result.next_due_at) - Date.now());
    // Due already (a pass cut at its budget, or a schedule due during it): the next pass now.
    if (wait <= 0 || changed) continue;
    await condition(() => changed, wait);
  }
  await continueAsNew<typeof scheduleTicks>({ shard: input.shard, passes });
}
