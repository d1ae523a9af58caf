import { Context } from '@temporalio/activity';
import type { ScheduleTickActivities } from '@envengine/contracts';
import type { ScheduleTicker } from './schedule-ticker.ts';

/**
 * How often a pass tells Temporal it is alive: under the workflow's heartbeat timeout
 * (libs/deployment-workflows/src/schedule-ticks.workflow.ts), so that a pass whose process
 * died is tried again within seconds, not after the pass's whole time limit.
 */
const HEARTBEAT_MS = 2_000;

/**
 * The tick loops' activity, served on this scope's own task queue (main.ts): a pass over the
 * shard, made here over this service's own repositories, where the stored schedules are.
 */
export function scheduleTickActivities(ticker: ScheduleTicker): ScheduleTickActivities {
  return {
    async tickSchedules({ shard }) {
      const activity = Context.current();
      const beat = setInterval(() => activity.heartbeat(), HEARTBEAT_MS);
      try {
        return await ticker.tickShard(shard);
      } finally {
        clearInterval(beat);
      }
    },
  };
}
