import type { ClientSession, Connection } from 'mongoose';
import { ApiError } from '@envengine/service-kit';
import type { EventCause, EventOutbox } from '@envengine/event-log';
import { inTransaction, type TenantScopedModel } from '@envengine/tenant-data';
import { aboutRun } from './run-events.ts';
import { ACTIVE_RUN, CANCELED_ASSETS, UNFINISHED_ASSETS } from './attempt-records.ts';
import type { AttemptDocument, RunDocument } from './run.schema.ts';

/** What a tear-down needs of the environment, inside its transaction. */
export interface TeardownFence {
  /** Marks it `deleting` (false when it is not active, or, with `expiredBy`, when its TTL has not lapsed by then). */
  markDeleting(
    tenantId: string,
    environmentId: string,
    request: { force: boolean; purge_data: boolean; reason: string },
    session: ClientSession,
    cause: EventCause,
    expiredBy?: Date,
  ): Promise<boolean>;
}

/**
 * The runs' part of an environment's tear-down (the lifecycle drives it): the environment
 * marked `deleting` with its unfinished runs canceled in one transaction, the cancel again
 * for any run that raced it, then the runs and their attempts removed batch by batch.
 */
export class RunTeardown {
  constructor(
    private readonly connection: Connection,
    private readonly runs: TenantScopedModel<RunDocument>,
    private readonly attempts: TenantScopedModel<AttemptDocument>,
    private readonly environments: TeardownFence,
    private readonly outbox: EventOutbox,
  ) {}

  /**
   * The first step of an environment's tear-down, in one transaction: it is marked
   * `deleting` (no run is admitted after that), and its unfinished runs and attempts are
   * canceled. With attempts running and no `force`, nothing changes: 409 `runs_running`. A
   * worker's start racing this conflicts with the cancel of its attempt, so either the
   * start wins and is counted, or the attempt is canceled first and the start refused.
   * Returns the attempts canceled (queued ones are withdrawn from their queue), or null
   * when the environment was not active (a tear-down already began, or the TTL moved).
   */
  async begin(
    tenantId: string,
    environmentId: string,
    request: { force: boolean; purge_data: boolean; reason: string },
    cause: EventCause,
    expiredBy?: Date,
  ): Promise<AttemptDocument[] | null> {
    return inTransaction(this.connection, async (session) => {
      const running = await this.attempts.count(tenantId, { environment_id: environmentId, status: 'running' }, { session });
      if (running > 0 && !request.force) {
        throw new ApiError(
          'runs_running',
          `${running} attempt${running === 1 ? ' is' : 's are'} running in this environment; cancel ${running === 1 ? 'it' : 'them'} first, or delete with ?force=true to cancel ${running === 1 ? 'it' : 'them'}.`,
        );
      }
      if (!(await this.environments.markDeleting(tenantId, environmentId, request, session, cause, expiredBy))) return null;
      return this.cancelAllOf(tenantId, environmentId, request.reason, session, cause);
    });
  }

  /** Cancels every unfinished run and attempt of an environment being torn down (again, for any that raced its start). */
  cancelAll(tenantId: string, environmentId: string, reason: string, cause: EventCause): Promise<AttemptDocument[]> {
    return inTransaction(this.connection, (session) => this.cancelAllOf(tenantId, environmentId, reason, session, cause));
  }

  /** Up to `limit` run ids of an environment (its tear-down removes them batch by batch). */
  async runIdsOf(tenantId: string, environmentId: string, limit: number): Promise<string[]> {
    const runs = await this.runs.find(tenantId, { environment_id: environmentId }, { projection: { _id: 1 }, limit });
    return runs.map((run) => run._id);
  }

  /** Removes these runs and their attempts, attempts first (a crash in between leaves the runs to find again). */
  async deleteRuns(tenantId: string, runIds: string[]): Promise<{ runs: number; attempts: number }> {
    const attempts = await this.attempts.deleteMany(tenantId, { run_id: { $in: runIds } });
    const runs = await this.runs.deleteMany(tenantId, { _id: { $in: runIds } });
    return { runs, attempts };
  }

  private async cancelAllOf(tenantId: string, environmentId: string, reason: string, session: ClientSession, cause: EventCause): Promise<AttemptDocument[]> {
    const now = new Date();
    const open = await this.attempts.find(tenantId, { environment_id: environmentId, status: { $in: ['queued', 'running'] } }, { session });
    await this.attempts.updateMany(
      tenantId,
      { environment_id: environmentId, status: { $in: ['queued', 'running'] } },
      { $set: { status: 'canceled', finished_at: now, current_asset: null, error: reason, ...CANCELED_ASSETS } },
      { session, arrayFilters: UNFINISHED_ASSETS },
    );
    // The runs read and canceled in this transaction: each of them gets its event, and no other.
    const ending = await this.runs.find(
      tenantId,
      { environment_id: environmentId, status: { $in: ACTIVE_RUN } },
      { session, projection: { _id: 1, environment_id: 1, environment_name: 1, trigger: 1 } },
    );
    if (ending.length === 0) return open;
    await this.runs.updateMany(
      tenantId,
      { _id: { $in: ending.map((run) => run._id) }, status: { $in: ACTIVE_RUN } },
      { $set: { status: 'canceled', finished_at: now, error: reason } },
      { session },
    );
    await this.outbox.recordMany(
      tenantId,
      ending.map((run) => ({ type: 'run.canceled', ...aboutRun(run), cause, data: { trigger: run.trigger, reason: 'environment_deleted' } })),
      session,
    );
    return open;
  }
}
