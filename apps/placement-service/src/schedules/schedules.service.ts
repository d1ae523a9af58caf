import { ApiError, notFound } from '@envengine/service-kit';
import { schedulesOfManifest, type Environment, type Schedule, type ScheduleDefinition, type ScheduleNextFireTimes } from '@envengine/contracts';
import { parsedCronOf, type EnvironmentSchedules } from '@envengine/environment-schedules';
import { nextFireTimes } from '@envengine/schedule-timing';
import type { DeploymentClient } from '@envengine/service-clients';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { RunRepository } from '../runs/run.repository.ts';
import type { ScheduleOverlapRepository } from './schedule-overlap.repository.ts';

const iso = (instant: number | undefined) => (instant === undefined ? null : new Date(instant).toISOString());

/** Temporal being away is a 503 that a retry of the same (idempotent) call gets past. */
async function throughTemporal<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw new ApiError('unavailable', `Temporal did not answer (${(error as Error).message}); try again shortly.`, {
      headers: { 'Retry-After': '2' },
    });
  }
}

/**
 * An environment's schedules: declared by its active deployment, timed by Temporal
 * Schedules (reconciled on activation by the deployment workflows), paused and resumed
 * with the environment's flag, which is the fence every tick passes.
 */
export class SchedulesService {
  constructor(
    private readonly environments: EnvironmentRepository,
    private readonly runs: RunRepository,
    private readonly overlaps: ScheduleOverlapRepository,
    private readonly deployments: DeploymentClient,
    private readonly temporal: EnvironmentSchedules,
  ) {}

  async list(tenantId: string, environmentName: string, requestId?: string): Promise<Schedule[]> {
    const environment = await this.environment(tenantId, environmentName);
    const definitions = await this.declared(tenantId, environment, requestId);
    const [lastRuns, skipped] = await Promise.all([
      this.runs.lastScheduledRuns(tenantId, environment.id, definitions.map((definition) => definition.name)),
      this.overlaps.skippedOf(tenantId, environment.id),
    ]);
    const now = Date.now();
    return definitions.map((definition) => ({
      ...definition,
      paused: environment.schedules_paused,
      next_run_at: environment.schedules_paused ? null : iso(nextFireTimes(parsedCronOf(definition), definition.timezone, now, 1)[0]),
      last_run_id: lastRuns.get(definition.name) ?? null,
      skipped_overlap: skipped.get(definition.name) ?? 0,
    }));
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
    return {
      name: definition.name,
      cron: definition.cron,
      timezone: definition.timezone,
      paused: environment.schedules_paused,
      after: new Date(after).toISOString(),
      next: nextFireTimes(parsedCronOf(definition), definition.timezone, after, query.count).map((instant) => new Date(instant).toISOString()),
    };
  }

  /** Sets the flag first (it stops ticks at once), then pauses Temporal's schedules so the Temporal UI agrees. */
  async pause(tenantId: string, environmentName: string, reason: string | undefined, requestId?: string): Promise<Environment> {
    const environment = await this.environments.pauseSchedules(tenantId, environmentName, reason);
    if (!environment) throw notFound(`Environment "${environmentName}"`);
    await this.setTemporalPaused(tenantId, environment, true, requestId);
    return environment;
  }

  /**
   * Resumes Temporal's schedules first, then clears the flag: until the flag is cleared a
   * tick still starts nothing, and a failure leaves the environment paused. Temporal does
   * not make up for ticks missed while paused, so no burst follows.
   */
  async resume(tenantId: string, environmentName: string, requestId?: string): Promise<Environment> {
    const environment = await this.environment(tenantId, environmentName);
    await this.setTemporalPaused(tenantId, environment, false, requestId);
    const resumed = await this.environments.resumeSchedules(tenantId, environmentName);
    if (!resumed) throw notFound(`Environment "${environmentName}"`);
    return resumed;
  }

  private async setTemporalPaused(tenantId: string, environment: Environment, paused: boolean, requestId?: string): Promise<void> {
    const names = (await this.declared(tenantId, environment, requestId)).map((definition) => definition.name);
    const note = paused ? `environment ${environment.name} paused${environment.schedules_paused_reason ? `: ${environment.schedules_paused_reason}` : ''}` : `environment ${environment.name} resumed`;
    await throughTemporal(() => this.temporal.setPaused(environment.id, names, paused, note));
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
