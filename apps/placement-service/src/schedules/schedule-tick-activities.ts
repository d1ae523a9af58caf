import type { ScheduleTickActivities } from '@envengine/contracts';
import type { ScheduleTicker } from './schedule-ticker.ts';

/**
 * The tick loops' activity, served on this scope's own task queue (main.ts): a pass over the
 * shard, made here over this service's own repositories, where the stored schedules are.
 */
export function scheduleTickActivities(ticker: ScheduleTicker): ScheduleTickActivities {
  return {
    tickSchedules: ({ shard }) => ticker.tickShard(shard),
  };
}
