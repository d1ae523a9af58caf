import { ScheduleNotFoundError, type Client } from '@temporalio/client';
import { ScheduledRunInput } from '@envengine/contracts';

/** Temporal Schedule ids of the first design: `sched-<environment id>-<schedule name>`. */
const SCHEDULE_ID_PREFIX = 'sched-';

/** One Temporal Schedule of the first design, with the tick input it carried. */
export interface LegacySchedule {
  scheduleId: string;
  input: ScheduledRunInput;
  paused: boolean;
}

/**
 * The Temporal Schedules of the first design (one per schedule, `sched-*`), which stored
 * schedules and the tick loops replace (docs/design.md#schedules-pause-and-resume). A data
 * directory made before holds them: at start-up they are found, their environments' schedules
 * stored, and they are deleted. Every call is idempotent.
 */
export class LegacyTemporalSchedules {
  constructor(private readonly client: Client) {}

  /** Every `sched-*` schedule Temporal lists, with its tick input (those without a readable one are listed with none). */
  async list(): Promise<{ found: LegacySchedule[]; unreadable: string[] }> {
    const found: LegacySchedule[] = [];
    const unreadable: string[] = [];
    for await (const summary of this.client.schedule.list()) {
      if (!summary.scheduleId.startsWith(SCHEDULE_ID_PREFIX)) continue;
      try {
        const description = await this.client.schedule.getHandle(summary.scheduleId).describe();
        const args = description.action.type === 'startWorkflow' ? description.action.args : undefined;
        const input = ScheduledRunInput.safeParse(args?.[0]);
        if (input.success) found.push({ scheduleId: summary.scheduleId, input: input.data, paused: description.state.paused });
        else unreadable.push(summary.scheduleId);
      } catch (error) {
        if (!(error instanceof ScheduleNotFoundError)) throw error;
      }
    }
    return { found, unreadable };
  }

  /** Deletes one; one already gone is fine. */
  async delete(scheduleId: string): Promise<boolean> {
    try {
      await this.client.schedule.getHandle(scheduleId).delete();
      return true;
    } catch (error) {
      if (error instanceof ScheduleNotFoundError) return false;
      throw error;
    }
  }

  /** Deletes every such schedule of an environment Temporal lists (its tear-down); how many. */
  async deleteAllOf(environmentId: string): Promise<number> {
    const prefix = `${SCHEDULE_ID_PREFIX}${environmentId}-`;
    let deleted = 0;
    for await (const summary of this.client.schedule.list({ query: `EnvengineEnvironmentId = '${environmentId}'` })) {
      if (summary.scheduleId.startsWith(prefix) && (await this.delete(summary.scheduleId))) deleted += 1;
    }
    return deleted;
  }
}
