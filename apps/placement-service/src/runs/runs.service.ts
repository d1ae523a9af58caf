import type { EventCause } from '@envengine/event-log';
import {
  CreateRunRequest,
  EnvironmentAccess,
  type DeploymentRunSpec,
  type Environment,
  type Run,
  type RunListQuery,
  type RunLogLine,
} from '@envengine/contracts';
import type { DeploymentClient } from '@envengine/service-clients';
import { ApiError, environmentDeleting, notFound, TtlCache } from '@envengine/service-kit';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { AttemptDispatcher } from './attempt-dispatcher.ts';
import { planRun } from './run-plan.ts';
import type { AttemptLogRepository } from './attempt-log.repository.ts';
import { toRun } from './run-mappers.ts';
import { EnvironmentDeletingError, type RunRepository } from './run.repository.ts';
import type { TickBatchHooks, TickRunOutcome, TickRunPlan, TickRunRequest } from './scheduled-run-batch.ts';
import type { WorkerRegistry } from './worker-registry.ts';
import type { AttemptDocument, RunDocument } from './run.schema.ts';

export interface RunsServiceOptions {
  /** Whether the queue can take an add now; a run is not created while it cannot. */
  queueReady: () => boolean;
  /** A worker that reported within this long counts as alive (the lease TTL). */
  workerLivenessMs: number;
}

/** Runs of the caller's environments: created against the active deployment, read, canceled. */
export class RunsService {
  /**
   * Deployments' run specs (manifest and bundle): a deployment never changes once stored,
   * so each is asked of the deployment scope once, not once per run.
   */
  private readonly runSpecs = new TtlCache<DeploymentRunSpec | undefined>({ ttlMs: 10 * 60_000, maxEntries: 100 });

  constructor(
    private readonly environments: EnvironmentRepository,
    private readonly runs: RunRepository,
    private readonly workers: WorkerRegistry,
    private readonly attemptLogs: AttemptLogRepository,
    private readonly deployments: DeploymentClient,
    private readonly dispatcher: AttemptDispatcher,
    private readonly options: RunsServiceOptions,
  ) {}

  /**
   * A manual run: the environment's active deployment at this moment is the one it
   * executes against. (A schedule's ticks make theirs in batches: `createForTicks`.)
   */
  async create(tenantId: string, environmentName: string, request: CreateRunRequest, cause: EventCause): Promise<Run> {
    const requestId = cause.requestId ?? undefined;
    const environment = await this.environment(tenantId, environmentName);
    // A deleting environment is refused inside the run's transaction (the fence a racing delete meets too).
    if (!environment.active_deployment_id) {
      throw new ApiError('no_active_deployment', `Environment "${environmentName}" has no active deployment; deploy one first.`);
    }
    const deploymentId = environment.active_deployment_id;
    const spec = await this.runSpecs.get(`${tenantId}/${deploymentId}`, () => this.deployments.runSpec(tenantId, deploymentId, requestId));
    if (!spec) throw new ApiError('no_active_deployment', `The active deployment of "${environmentName}" was not found.`);
    const plan = planRun(spec.manifest, request.job !== undefined ? { job: request.job } : { assets: request.assets! });
    if (!plan.ok) throw new ApiError('invalid_request', 'The run names jobs or assets the active deployment does not have.', { details: plan.details });
    if (!this.options.queueReady()) {
      throw new ApiError('unavailable', 'The attempt queue (Redis) is unreachable; try again shortly.', { headers: { 'Retry-After': '2' } });
    }
    const { run, attempt, striped } = await this.runs
      .create(tenantId, {
        environment: { id: environment.id, name: environment.name, executor: environment.executor },
        deployment: { id: spec.id, bundle_ref: spec.bundle_ref },
        job: plan.job,
        assets: plan.assets,
        maxAttempts: request.max_attempts,
        timeoutSeconds: request.timeout_seconds ?? null,
      }, cause)
      .catch((error: unknown) => {
        throw error instanceof EnvironmentDeletingError ? environmentDeleting(environmentName) : error;
      });
    // Stored first; if the add fails the run is still queued and the reconciler delivers it.
    // A run waiting for a slot goes on its queue when an earlier run ends.
    if (!attempt.waiting_for_slot) await this.dispatcher.dispatch(attempt);
    // A run is a preview's activity: its idle lifetime starts again (never past its TTL).
    if (environment.idle_ttl_hours !== null) await this.environments.touchActivity(tenantId, environment.id);
    // The environment's first run without a limit: its next ones go through admission stripes.
    if (!striped && environment.max_concurrent_runs === null) await this.environments.openStripes(tenantId, environment.id);
    return toRun(run, [attempt], await this.waitingForWorker(tenantId, [attempt]));
  }

  /**
   * A batch of one tenant's ticks turned into runs (`ScheduledRunBatch`: one transaction,
   * every fence of a run's creation held), then their first attempts added to their queues
   * in one go. Each run executes the environment's active deployment as the transaction
   * reads it; a deployment's manifest is asked of the deployment scope once, however many
   * ticks run it.
   */
  async createForTicks(tenantId: string, ticks: readonly TickRunRequest[], hooks: Pick<TickBatchHooks, 'stillDue' | 'record'>): Promise<Map<string, TickRunOutcome>> {
    if (!this.options.queueReady()) throw new ApiError('unavailable', 'The attempt queue (Redis) is unreachable; the ticks wait for it.');
    // Previews with an idle lifetime whose schedules made runs: each run is activity.
    const idle = new Set<string>();
    const { outcomes, attempts } = await this.runs.scheduledRuns.create(tenantId, ticks, {
      ...hooks,
      planOf: (environment, job) => {
        if (environment.idle_ttl_hours !== null) idle.add(environment.id);
        return this.tickPlanOf(tenantId, environment, job);
      },
    });
    if (attempts.length > 0) {
      // Stored first; if the adds fail the runs are still queued and the reconciler delivers them.
      await this.dispatcher.dispatchNew(attempts.filter((attempt) => !attempt.waiting_for_slot));
      for (const environmentId of new Set(attempts.map((attempt) => attempt.environment_id))) if (idle.has(environmentId)) await this.environments.touchActivity(tenantId, environmentId);
    }
    return outcomes;
  }

  private async tickPlanOf(tenantId: string, environment: Environment, job: string): Promise<TickRunPlan> {
    const deploymentId = environment.active_deployment_id;
    const spec = deploymentId === null ? undefined : await this.runSpecs.get(`${tenantId}/${deploymentId}`, () => this.deployments.runSpec(tenantId, deploymentId));
    // Activation stores a deployment's schedules only once it is active, and a schedule names a job of its manifest.
    if (!spec) throw new Error(`environment ${environment.id} has a schedule but no active deployment`);
    const request = CreateRunRequest.parse({ job });
    const plan = planRun(spec.manifest, { job });
    if (!plan.ok) throw new Error(`the active deployment of environment ${environment.id} has no job "${job}" for its schedule`);
    return { deployment: { id: spec.id, bundle_ref: spec.bundle_ref }, job: plan.job, assets: plan.assets, maxAttempts: request.max_attempts, timeoutSeconds: request.timeout_seconds ?? null };
  }

  async list(tenantId: string, environmentName: string, query: RunListQuery): Promise<Run[]> {
    const environment = await this.environment(tenantId, environmentName);
    const runs = await this.runs.listRuns(tenantId, environment.id, query);
    const attempts = runs.length > 0 ? await this.runs.attemptsOf(tenantId, runs.map((run) => run._id)) : [];
    return this.withAttempts(tenantId, runs, attempts);
  }

  /** `environments`: a token limited to environments finds no run of another (as another tenant's). */
  async get(tenantId: string, runId: string, environments: EnvironmentAccess = EnvironmentAccess.ALL): Promise<Run> {
    const run = await this.runs.findRun(tenantId, runId);
    if (!run || !environments.allows(run.environment_name)) throw notFound(`Run "${runId}"`);
    const [withAttempts] = await this.withAttempts(tenantId, [run], await this.runs.attemptsOf(tenantId, [run._id]));
    return withAttempts!;
  }

  async logs(tenantId: string, runId: string, after: string | undefined, limit: number, environments: EnvironmentAccess): Promise<RunLogLine[]> {
    const run = await this.runs.findRun(tenantId, runId);
    if (!run || !environments.allows(run.environment_name)) throw notFound(`Run "${runId}"`);
    return this.attemptLogs.lines(tenantId, runId, after, limit);
  }

  /** Cancels the run; a running attempt's worker learns it at its next heartbeat and kills the code. */
  async cancel(tenantId: string, runId: string, cause: EventCause, environments: EnvironmentAccess = EnvironmentAccess.ALL): Promise<Run> {
    if (environments.restricted) {
      const run = await this.runs.findRun(tenantId, runId);
      if (!run || !environments.allows(run.environment_name)) throw notFound(`Run "${runId}"`);
    }
    const { canceled, admitted } = await this.runs.cancel(tenantId, runId, cause);
    await this.dispatcher.withdraw(canceled);
    await this.dispatcher.dispatchAll(admitted);
    return this.get(tenantId, runId);
  }

  private async environment(tenantId: string, name: string): Promise<Environment> {
    const environment = await this.environments.findByName(tenantId, name);
    if (!environment) throw notFound(`Environment "${name}"`);
    return environment;
  }

  private async withAttempts(tenantId: string, runs: RunDocument[], attempts: AttemptDocument[]): Promise<Run[]> {
    const byRun = new Map<string, AttemptDocument[]>();
    for (const attempt of attempts) byRun.set(attempt.run_id, [...(byRun.get(attempt.run_id) ?? []), attempt]);
    const anyWaiting = attempts.some((attempt) => attempt.status === 'queued' && attempt.executor === 'remote');
    const noWorker = anyWaiting && !(await this.workers.hasLiveRemoteWorker(tenantId, this.options.workerLivenessMs));
    return runs.map((run) => {
      const own = byRun.get(run._id) ?? [];
      const waiting = noWorker && own.some((attempt) => attempt.status === 'queued' && attempt.executor === 'remote');
      return toRun(run, own, waiting);
    });
  }

  private async waitingForWorker(tenantId: string, attempts: AttemptDocument[]): Promise<boolean> {
    if (!attempts.some((attempt) => attempt.status === 'queued' && attempt.executor === 'remote')) return false;
    return !(await this.workers.hasLiveRemoteWorker(tenantId, this.options.workerLivenessMs));
  }
}
