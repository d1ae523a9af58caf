import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
  type ScheduleOptionsStartWorkflowAction,
  type Workflow,
} from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import type { ScheduleDefinition } from '@envengine/contracts';
import { scheduleIdOf, SPRING_FORWARD_COMMENT, temporalSpecOf } from './schedule-spec.ts';

/** Which environment's schedules: ids and names only. */
export interface ScheduleScope {
  tenantId: string;
  environmentId: string;
  environmentName: string;
}

/** What a tick starts: a workflow given the schedule's definition, with the environment's search attributes. */
export interface ScheduleAction {
  workflowType: string;
  taskQueue: string;
  args: (definition: ScheduleDefinition) => unknown[];
  searchAttributes: SearchAttributePair[];
}

export interface ReconcileOutcome {
  created: string[];
  updated: string[];
  deleted: string[];
}

/**
 * How late Temporal may still start a tick. The 2-core dev server starts at most about
 * 5–6 scheduled ticks a second (500 per-minute schedules: about 1,750 of 2,500 ticks
 * fired). With a one-minute window the rest are let pass and counted by Temporal, and the
 * ticks that fire are about 10 s late (p50); with five minutes, lateness grew to 50 s and
 * Temporal's overlap policy dropped the ticks that queued up instead. Temporal's minimum is
 * 10 s, too short for a busy server (2,188 of 2,500 ticks let pass). A paused schedule lets
 * its ticks pass without counting them, whatever this window: resume fires no catch-up.
 */
const CATCHUP_WINDOW = '1 minute';

const isNotFound = (error: unknown) => error instanceof ScheduleNotFoundError;

/** The one-off spring-forward entries of a spec (Temporal shows the cron as calendars too, without our comment). */
const springForwardEntries = (calendars: readonly { comment?: string }[] | undefined) =>
  (calendars ?? []).filter((calendar) => calendar.comment === SPRING_FORWARD_COMMENT).length;

/**
 * An environment's Temporal Schedules (one per schedule name): made to match a
 * deployment's manifest, paused and resumed with the environment, described for the API.
 * Every call is idempotent, so an activity's retry repeats it safely.
 */
export class EnvironmentSchedules {
  constructor(private readonly client: Client) {}

  /**
   * Creates, updates and deletes schedules so that exactly `target` exists. Existing
   * schedules keep their paused state; new ones start paused when `paused` is set.
   * `mayExist` names schedules that may exist (the active manifest's): listing is
   * eventually consistent, so a schedule made a moment ago is deleted by name too.
   */
  async reconcile(
    scope: ScheduleScope,
    target: ScheduleDefinition[],
    options: { paused: boolean; mayExist: string[]; action: ScheduleAction; now: number },
  ): Promise<ReconcileOutcome> {
    const outcome: ReconcileOutcome = { created: [], updated: [], deleted: [] };
    const listed = this.listedNames(scope.environmentId);
    await Promise.all(
      target.map(async (definition) => {
        const change = await this.upsert(scope, definition, options);
        if (change) outcome[change].push(definition.name);
      }),
    );
    const wanted = new Set(target.map((definition) => definition.name));
    const existing = new Set([...options.mayExist, ...(await listed)]);
    await Promise.all(
      [...existing]
        .filter((name) => !wanted.has(name))
        .map(async (name) => {
          try {
            await this.client.schedule.getHandle(scheduleIdOf(scope.environmentId, name)).delete();
            outcome.deleted.push(name);
          } catch (error) {
            if (!isNotFound(error)) throw error;
          }
        }),
    );
    return outcome;
  }

  /**
   * Deletes every schedule of the environment (its tear-down): those Temporal lists and
   * those named (listing is eventually consistent). Returns the names deleted.
   */
  async deleteAll(environmentId: string, mayExist: string[]): Promise<string[]> {
    const all = new Set([...mayExist, ...(await this.listedNames(environmentId))]);
    const deleted: string[] = [];
    await Promise.all(
      [...all].map(async (name) => {
        try {
          await this.client.schedule.getHandle(scheduleIdOf(environmentId, name)).delete();
          deleted.push(name);
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
      }),
    );
    return deleted;
  }

  /** Pauses or resumes the named schedules (a missing one is skipped). */
  async setPaused(environmentId: string, names: string[], paused: boolean, note: string): Promise<void> {
    const all = new Set([...names, ...(await this.listedNames(environmentId))]);
    await Promise.all(
      [...all].map(async (name) => {
        const handle = this.client.schedule.getHandle(scheduleIdOf(environmentId, name));
        try {
          await (paused ? handle.pause(note) : handle.unpause(note));
        } catch (error) {
          if (!isNotFound(error)) throw error;
        }
      }),
    );
  }

  /** The schedule as Temporal has it, or undefined when it does not exist (yet). */
  async describe(environmentId: string, name: string): Promise<ScheduleDescription | undefined> {
    try {
      return await this.client.schedule.getHandle(scheduleIdOf(environmentId, name)).describe();
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  private async upsert(
    scope: ScheduleScope,
    definition: ScheduleDefinition,
    options: { paused: boolean; action: ScheduleAction; now: number },
  ): Promise<'created' | 'updated' | null> {
    const scheduleId = scheduleIdOf(scope.environmentId, definition.name);
    const spec = temporalSpecOf(definition, options.now);
    const action: ScheduleOptionsStartWorkflowAction<Workflow> = {
      type: 'startWorkflow',
      workflowType: options.action.workflowType,
      taskQueue: options.action.taskQueue,
      args: options.action.args(definition),
      // Temporal appends the tick's time: `scheduled-<environment id>-<name>-<time>`.
      workflowId: `scheduled-${scope.environmentId}-${definition.name}`,
      typedSearchAttributes: options.action.searchAttributes,
    };
    // SKIP also keeps a schedule's ticks one at a time, which the placement-service's
    // overlap check (on the schedule's previous run) relies on.
    const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: CATCHUP_WINDOW, pauseOnFailure: false };
    // Create first: one call for a new schedule; an existing one answers "already running".
    try {
      await this.client.schedule.create({
        scheduleId,
        spec,
        action,
        policies,
        state: { paused: options.paused, note: options.paused ? 'created paused: the environment is paused' : undefined },
        memo: { tenant_id: scope.tenantId, environment: scope.environmentName, job: definition.job },
        typedSearchAttributes: options.action.searchAttributes,
      });
      return 'created';
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw error;
    }
    const previous = await this.describe(scope.environmentId, definition.name);
    const unchanged =
      previous !== undefined &&
      previous.action.type === 'startWorkflow' &&
      // The args carry the cron, zone and job; the one-offs' counts follow the clock changes ahead.
      JSON.stringify(previous.action.args) === JSON.stringify(action.args) &&
      springForwardEntries(previous.spec.calendars) === springForwardEntries(spec.calendars) &&
      (previous.spec.intervals ?? []).length === (spec.intervals ?? []).length &&
      previous.spec.timezone === spec.timezone;
    if (unchanged) return null;
    await this.client.schedule.getHandle(scheduleId).update((current) => ({
      spec,
      action,
      policies,
      // Never changed by an activation: the environment's pause flag decides it.
      state: { paused: current.state.paused, note: current.state.note },
    }));
    return 'updated';
  }

  private async listedNames(environmentId: string): Promise<string[]> {
    const prefix = scheduleIdOf(environmentId, '');
    const names: string[] = [];
    for await (const summary of this.client.schedule.list({ query: `EnvengineEnvironmentId = '${environmentId}'` })) {
      if (summary.scheduleId.startsWith(prefix)) names.push(summary.scheduleId.slice(prefix.length));
    }
    return names;
  }
}
