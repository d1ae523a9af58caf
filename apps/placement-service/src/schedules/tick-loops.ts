import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { SCHEDULE_TICKS_WORKFLOW, SCHEDULES_CHANGED_SIGNAL, ScheduleTicksInput, scheduleTicksWorkflowId } from '@envengine/contracts';
import type { Logger } from '@envengine/service-kit';

/**
 * The tick loops (`schedule-ticks-<shard>`, run by the workflow-worker): this service owns
 * the stored schedules, so it starts one loop per shard and tells a loop when its shard's
 * schedules changed (a new or earlier fire time than the one it sleeps until).
 */
export class TickLoops {
  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly shards: number,
    private readonly log: Logger,
  ) {}

  /** Starts each shard's loop unless it runs (a second replica's start joins it). */
  async ensureRunning(): Promise<void> {
    for (let shard = 0; shard < this.shards; shard++) {
      await this.client.workflow.start(SCHEDULE_TICKS_WORKFLOW, {
        workflowId: scheduleTicksWorkflowId(shard, this.taskQueue),
        taskQueue: this.taskQueue,
        args: [ScheduleTicksInput.parse({ shard })],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      });
    }
  }

  /**
   * Wakes the shard's loop so it reads its earliest fire time again. Best effort: a loop
   * that misses it wakes at the time it slept until, and looks again at least once a minute.
   */
  async changed(shard: number): Promise<void> {
    try {
      await this.client.workflow.getHandle(scheduleTicksWorkflowId(shard, this.taskQueue)).signal(SCHEDULES_CHANGED_SIGNAL);
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) {
        await this.ensureRunning().catch((startError: Error) => this.log.warn({ err: startError.message }, 'could not start the schedule tick loops'));
        return;
      }
      this.log.warn({ shard, err: (error as Error).message }, 'could not wake the schedule tick loop; it looks again within a minute');
    }
  }
}
