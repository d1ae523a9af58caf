import { ENGINE_CAUSE, type EventCause } from '@envengine/event-log';
import type {
  CreateEnvironmentRequest,
  DeleteEnvironmentQuery,
  Environment,
  EnvironmentRetired,
  ExpireEnvironmentResult,
  PatchEnvironmentRequest,
  TeardownStepReport,
} from '@envengine/contracts';
import { ApiError, notFound, type Logger } from '@envengine/service-kit';
import type { AttemptDispatcher } from '../runs/attempt-dispatcher.ts';
import type { AttemptLogRepository } from '../runs/attempt-log.repository.ts';
import type { RunRepository } from '../runs/run.repository.ts';
import { EXPIRY_REASON, type EnvironmentRepository, type TeardownRequest } from '../environments/environment.repository.ts';
import { TeardownStillRunningError, type LifecycleWorkflows } from './lifecycle-workflows.ts';

/**
 * An environment's life past its create (docs/design.md#environment-lifecycle): the
 * settings a PATCH changes, the delete and its tear-down, and a preview's expiry. The
 * tear-down is a Temporal workflow (`teardown-<id>`); its steps on this scope's data are
 * the internal routes it calls back (`removeRuns`, `remove`), the others are the
 * workflow-worker's own (deployment records) or the secrets-service's.
 */
export class EnvironmentLifecycle {
  constructor(
    private readonly environments: EnvironmentRepository,
    private readonly runs: RunRepository,
    private readonly logs: AttemptLogRepository,
    private readonly dispatcher: AttemptDispatcher,
    private readonly workflows: LifecycleWorkflows,
    private readonly log: Logger,
    private readonly options: { teardownWaitMs: number },
    /** Tells the engine's runners that the environment is gone (they drop its bundles from their caches). */
    private readonly announceRetired: (retired: EnvironmentRetired) => Promise<unknown>,
    /** Removes the environment's users from the engine's object store, with every key they have; absent without a store. */
    private readonly retireStoreUsers?: (environmentId: string) => Promise<void>,
  ) {}

  /**
   * The 404 for a name the tenant has no environment of: `environment_expired`, with the
   * expiry, for a week after a preview's TTL removed it; else `not_found`.
   */
  async missing(tenantId: string, name: string): Promise<ApiError> {
    const expiredAt = await this.environments.expiredAt(tenantId, name);
    if (!expiredAt) return notFound(`Environment "${name}"`);
    const at = expiredAt.toISOString();
    return new ApiError('environment_expired', `Environment "${name}" expired at ${at} (its ttl_hours lapsed) and was torn down.`, {
      details: [{ path: 'expires_at', message: at }],
    });
  }

  /** A new environment; a preview with a TTL gets its expiry timer. `visible`: the environments the caller's token sees (a refusal names only those). */
  async create(
    tenantId: string,
    request: CreateEnvironmentRequest & { storage_prefix: string },
    cause: EventCause,
    visible?: (name: string) => boolean,
    parent: { id: string; name: string } | null = null,
  ): Promise<Environment> {
    const environment = await this.environments.create(tenantId, request, cause, visible, parent);
    if (environment.expires_at) await this.armExpiry(tenantId, environment);
    return environment;
  }

  /**
   * A PATCH: the settings in one update; a raised (or removed) run limit gives waiting
   * runs their slots now, and a changed TTL moves the expiry timer.
   */
  async patch(tenantId: string, name: string, patch: PatchEnvironmentRequest, cause: EventCause): Promise<Environment> {
    const environment = await this.environments.patch(tenantId, name, patch, cause);
    if (!environment) throw await this.missing(tenantId, name);
    if (patch.max_concurrent_runs !== undefined) await this.dispatcher.dispatchAll(await this.runs.fillSlots(tenantId, environment.id));
    if (patch.ttl_hours !== undefined || patch.idle_ttl_hours !== undefined) await this.armExpiry(tenantId, environment);
    return environment;
  }

  /** A deploy arrived: a preview's expiry moves to its TTL from now. */
  async extendTtl(tenantId: string, name: string): Promise<Environment> {
    const environment = await this.environments.extendTtl(tenantId, name);
    if (!environment) throw notFound(`Environment "${name}"`);
    if (environment.expires_at) await this.armExpiry(tenantId, environment);
    return environment;
  }

  /**
   * `DELETE /environments/:name`: marks it `deleting` and cancels its unfinished runs in one
   * transaction (409 `runs_running` while attempts run, unless `force`), then runs the
   * tear-down workflow and waits for it. A second delete, or one after a crash, joins or
   * resumes the tear-down from the stored mark.
   */
  async delete(tenantId: string, name: string, query: DeleteEnvironmentQuery, cause: EventCause): Promise<{ name: string }> {
    const environment = await this.environments.findByName(tenantId, name);
    if (!environment) throw await this.missing(tenantId, name);
    // Forced: its previews are torn down first (with the same flags); one made meanwhile
    // is found by the mark's own check, which refuses, and the next delete takes it too.
    if (query.force && environment.status === 'active') {
      for (const preview of await this.environments.livePreviewsOf(tenantId, environment.id)) await this.delete(tenantId, preview.name, query, cause);
    }
    if (environment.status === 'active') {
      await this.begin(tenantId, environment, { force: query.force, purge_data: query.purge_data, reason: 'environment deleted' }, cause);
    }
    const target = await this.environments.teardownOf(tenantId, environment.id);
    // Gone between the two reads: a tear-down already under way has finished.
    if (!target) return { name: environment.name };
    try {
      await this.workflows.tearDown(target, this.options.teardownWaitMs);
    } catch (error) {
      if (!(error instanceof TeardownStillRunningError)) throw error;
      throw new ApiError('unavailable', `The tear-down of "${name}" is still running; it goes on, and deleting again waits for it.`, {
        headers: { 'Retry-After': '5' },
      });
    }
    return { name: environment.name };
  }

  /**
   * The expiry timer fired: the tear-down begins, with running attempts canceled, if the
   * stored expiry has passed (the record of truth: a deploy may have moved it); otherwise
   * the later instant is answered for the timer to sleep until.
   */
  async expire(tenantId: string, environmentId: string): Promise<ExpireEnvironmentResult> {
    const environment = await this.environments.findById(tenantId, environmentId);
    if (!environment) return { expired: true, expires_at: null };
    if (environment.status === 'deleting') {
      // Marked by an earlier try whose workflow start failed, or by a DELETE: the tear-down is (re)started, idempotently.
      const target = await this.environments.teardownOf(tenantId, environmentId);
      if (target) await this.workflows.tearDown(target, 0);
      return { expired: true, expires_at: environment.expires_at };
    }
    if (environment.expires_at === null) return { expired: false, expires_at: null };
    // A preview's files go with it unless it was made with `purge_data_on_expiry: false`.
    const began = await this.begin(tenantId, environment, { force: true, purge_data: environment.purge_data_on_expiry, reason: EXPIRY_REASON }, ENGINE_CAUSE, new Date());
    if (!began) {
      const now = await this.environments.findById(tenantId, environmentId);
      if (now?.status === 'active') return { expired: false, expires_at: now.expires_at };
    }
    const target = await this.environments.teardownOf(tenantId, environmentId);
    if (target) await this.workflows.tearDown(target, 0);
    this.log.info({ tenant_id: tenantId, environment_id: environmentId }, 'environment expired; tear-down started');
    return { expired: true, expires_at: environment.expires_at };
  }

  /** A tear-down step: cancels what is left of the environment's runs, then removes runs, attempts and logs. */
  async removeRuns(tenantId: string, environmentId: string): Promise<TeardownStepReport> {
    await this.requireDeleting(tenantId, environmentId);
    const canceled = await this.runs.teardown.cancelAll(tenantId, environmentId, 'environment deleted', ENGINE_CAUSE);
    await this.dispatcher.withdraw(canceled);
    const report = { canceled: canceled.length, runs: 0, attempts: 0, log_lines: 0 };
    // Lines, then attempts, then runs, batch by batch: a step cut short finds the rest by the runs left.
    for (let runIds = await this.runs.teardown.runIdsOf(tenantId, environmentId, 500); runIds.length > 0; runIds = await this.runs.teardown.runIdsOf(tenantId, environmentId, 500)) {
      report.log_lines += await this.logs.deleteOfRuns(tenantId, runIds);
      const removed = await this.runs.teardown.deleteRuns(tenantId, runIds);
      report.runs += removed.runs;
      report.attempts += removed.attempts;
    }
    return report;
  }

  /** The tear-down's last step: the document goes and the name is free. Idempotent: an environment already gone is fine. */
  async remove(tenantId: string, environmentId: string): Promise<void> {
    // Its attempts are over (the runs step canceled them), so no key is handed out any more:
    // the users go, and with them their keys, one the environment minted itself included.
    // A store that refuses fails the step, which the workflow runs again. Only an `s3://`
    // environment can have users there (a file:// one's delete never waits on the store);
    // the document goes after them, so a repeat that finds it gone has nothing left to do.
    const environment = await this.environments.findById(tenantId, environmentId);
    if (environment && /^s3:\/\//i.test(environment.storage_prefix)) await this.retireStoreUsers?.(environmentId);
    const removed = await this.environments.removeDeleting(tenantId, environmentId);
    if (removed) this.log.info({ tenant_id: tenantId, environment_id: environmentId }, 'environment deleted');
    // Again on a repeat (the first may have been lost); a runner that misses it keeps the bundles until its cache's bound removes them.
    await this.announceRetired({ tenant_id: tenantId, environment_id: environmentId }).catch((error: Error) =>
      this.log.warn({ environment_id: environmentId, err: error.message }, "could not tell the runners that the environment is gone; its bundles stay in their caches until evicted"),
    );
  }

  /**
   * At start-up: tear-downs that began (a crash between the mark and the workflow's start,
   * or a tear-down that gave up) are started again, and every preview's expiry timer is
   * armed again (a timer Temporal never got is made now; a running one is told the same
   * instant).
   */
  async resume(): Promise<void> {
    for (const target of await this.environments.allDeleting(1000)) {
      await this.workflows
        .tearDown(target, 0)
        .catch((error: Error) => this.log.warn({ environment_id: target.environment.id, err: error.message }, 'could not resume a tear-down; the next delete will'));
    }
    for (const { tenantId, environment } of await this.environments.allExpiring(1000)) await this.armExpiry(tenantId, environment);
  }

  private async begin(tenantId: string, environment: Environment, request: TeardownRequest, cause: EventCause, expiredBy?: Date): Promise<boolean> {
    const canceled = await this.runs.teardown.begin(tenantId, environment.id, request, cause, expiredBy);
    if (canceled === null) return false;
    await this.dispatcher.withdraw(canceled);
    this.log.info({ tenant_id: tenantId, environment_id: environment.id, canceled: canceled.length, reason: request.reason }, 'environment marked deleting');
    return true;
  }

  private async requireDeleting(tenantId: string, environmentId: string): Promise<void> {
    const environment = await this.environments.findById(tenantId, environmentId);
    // A step repeated after the last one removed the environment finds nothing left to do.
    if (environment && environment.status !== 'deleting') {
      throw new ApiError('invalid_request', `Environment ${environmentId} is not being deleted.`);
    }
  }

  /** The expiry timer follows the stored expiry; a Temporal outage is not the create's or the deploy's failure (the next start-up or deploy arms it). */
  private async armExpiry(tenantId: string, environment: Environment): Promise<void> {
    await this.workflows.moveExpiry(tenantId, environment).catch((error: Error) => {
      this.log.warn({ environment_id: environment.id, err: error.message }, 'could not arm the expiry timer; it is armed again at the next start-up or deploy');
    });
  }
}
