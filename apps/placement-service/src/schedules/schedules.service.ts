import type { EventCause } from '@envengine/event-log';
import { notFound } from '@envengine/service-kit';
import {
  ScheduleTickOutcome,
  schedulesOfManifest,
  type Environment,
  type ReconcileSchedulesResult,
  type Schedule,
  type ScheduleDefinition,
  type ScheduleNextFireTimes,
  type SchedulesRemoved,
} from '@envengine/contracts';
import { nextFireTimes, parseCronExpression } from '@envengine/schedule-timing';
import type { DeploymentClient } from '@envengine/service-clients';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { RunRepository } from '../runs/run.repository.ts';
import type { StoredScheduleDocument } from './stored-schedule.schema.ts';
import { firstFireAfter, type StoredSchedulesRepository } from './stored-schedules.repository.ts';
import type { TickLoops } from './tick-loops.ts';

const iso = (instant: Date | number | null | undefined) => (instant === null || instant === undefined ? null : new Date(instant).toISOString());

function ticksOf(doc: StoredScheduleDocument | undefined): Record<ScheduleTickOutcome, number> {
  return Object.fromEntries(ScheduleTickOutcome.options.map((outcome) => [outcome, doc?.ticks?.[outcome] ?? 0])) as Record<ScheduleTickOutcome, number>;
}

/**
 * An environment's schedules: declared by its active deployment, stored with their next
 * fire time (made to match on activation), ticked in batches by the tick loops, paused and
 * resumed with the environment's flag, which is the fence every tick passes.
 */
export class SchedulesService {
  constructor(
    private readonly environments: EnvironmentRepository,
    private readonly runs: RunRepository,
    private readonly stored: StoredSchedulesRepository,
    private readonly deployments: DeploymentClient,
    private readonly loops: TickLoops,
  ) {}

  async list(tenantId: string, environmentName: string, requestId?: string): Promise<Schedule[]> {
    const environment = await this.environment(tenantId, environmentName);
    const definitions = await this.declared(tenantId, environment, requestId);
    const [lastRuns, stored] = await Promise.all([
      this.runs.lastScheduledRuns(tenantId, environment.id, definitions.map((definition) => definition.name)),
      this.stored.ofEnvironment(tenantId, environment.id),
    ]);
    const now = Date.now();
    return definitions.map((definition) => {
      const row = stored.get(definition.name);
      const tick = row?.last_tick;
      // The stored fire time is the one the tick loop acts on; until activation stored it, the same code computes it.
      const next = row && row.cron === definition.cron && row.timezone === definition.timezone ? row.next_fire_at : firstFireAfter(definition, now);
      return {
        ...definition,
        paused: environment.schedules_paused,
        next_run_at: environment.schedules_paused ? null : iso(next),
        last_run_id: lastRuns.get(definition.name) ?? null,
        skipped_overlap: row?.ticks?.skipped_overlap ?? 0,
        last_tick: tick
          ? { fire_at: iso(tick.fire_at)!, outcome: tick.outcome, run_id: tick.run_id, lateness_seconds: Math.max(0, tick.lateness_ms) / 1000, missed: tick.missed }
          : null,
        ticks: ticksOf(row),
      };
    });
  }

  async next(
    tenantId: string,
    environmentName: string,
    scheduleName: string,
    query: { count: number; after?: string },
    requestId?: string,
  ): Promise<ScheduleNextFireTimes> {
    const environment = await this.environment(tenantId, environmentName);
    const definition = (await this.declared(tenantId, environment, requestId)).find((declared) => declared.name === scheduleName);
    if (!definition) throw notFound(`Schedule "${scheduleName}" of environment "${environmentName}"`);
    const after = query.after === undefined ? Date.now() : Date.parse(query.after);
    const cron = parseCronExpression(definition.cron);
    if (typeof cron === 'string') throw new Error(`cron ${JSON.stringify(definition.cron)} is not valid: ${cron}`);
    return {
      name: definition.name,
      cron: definition.cron,
      timezone: definition.timezone,
      paused: environment.schedules_paused,
      after: new Date(after).toISOString(),
      next: nextFireTimes(cron, definition.timezone, after, query.count).map((instant) => new Date(instant).toISOString()),
    };
  }

  /** Sets the flag: from its return on, no tick of the environment makes a run (each is recorded `skipped_paused`). */
  async pause(tenantId: string, environmentName: string, reason: string | undefined, cause: EventCause): Promise<Environment> {
    const environment = await this.environments.pauseSchedules(tenantId, environmentName, reason, cause);
    if (!environment) throw notFound(`Environment "${environmentName}"`);
    return environment;
  }

  /**
   * Clears the flag and, in the same transaction, moves each schedule to its first fire
   * time after now: the next run is the next tick after the resume, with no catch-up.
   */
  async resume(tenantId: string, environmentName: string, cause: EventCause): Promise<Environment> {
    const now = new Date();
    const resumed = await this.environments.resumeSchedules(tenantId, environmentName, cause, (environmentId, session) => this.stored.restartFrom(tenantId, environmentId, now, session));
    if (!resumed) throw notFound(`Environment "${environmentName}"`);
    await this.loops.changed(this.stored.shardOf(resumed.id));
    return resumed;
  }

  /** Activation, rollback or restore: the environment's stored schedules become `target`; its loop is told. */
  async reconcile(tenantId: string, environmentId: string, target: ScheduleDefinition[]): Promise<ReconcileSchedulesResult> {
    // Fenced against the environment's delete: a reconcile that lands after the tear-down
    // removed the schedules would leave them behind (the soak found one).
    const result = await this.environments.whileActive(tenantId, environmentId, (session) => this.stored.reconcile(tenantId, environmentId, target, new Date(), session));
    if (!result) throw notFound(`Environment ${environmentId}`);
    if (result.created.length > 0 || result.updated.length > 0) await this.loops.changed(this.stored.shardOf(environmentId));
    return result;
  }

  /** The tear-down's step: the environment's stored schedules go. */
  async removeAll(tenantId: string, environmentId: string): Promise<SchedulesRemoved> {
    return { deleted: await this.stored.deleteAllOf(tenantId, environmentId) };
  }

  private async declared(tenantId: string, environment: Environment, requestId?: string): Promise<ScheduleDefinition[]> {
    if (!environment.active_deployment_id) return [];
    const spec = await this.deployments.runSpec(tenantId, environment.active_deployment_id, requestId);
    return spec ? schedulesOfManifest(spec.manifest) : [];
  }

  private async environment(tenantId: string, name: string): Promise<Environment> {
    const environment = await this.environments.findByName(tenantId, name);
    if (!environment) throw notFound(`Environment "${name}"`);
    return environment;
  }
}
