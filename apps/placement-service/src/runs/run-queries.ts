import type { Connection } from 'mongoose';
import type { Executor, RunListQuery } from '@envengine/contracts';
import { TenantScopedModel } from '@envengine/tenant-data';
import { attemptSchema, runSchema, type AttemptDocument, type RunDocument } from './run.schema.ts';

/** The reads of runs and attempts: by id, by environment, by schedule, and the pool's counts. */
export class RunQueries {
  protected readonly runs: TenantScopedModel<RunDocument>;
  protected readonly attempts: TenantScopedModel<AttemptDocument>;

  constructor(connection: Connection) {
    this.runs = TenantScopedModel.of(connection, 'Run', runSchema);
    this.attempts = TenantScopedModel.of(connection, 'Attempt', attemptSchema);
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([this.runs.ensureIndexes(), this.attempts.ensureIndexes()]);
  }

  async findRun(tenantId: string, runId: string): Promise<RunDocument | undefined> {
    return (await this.runs.findOne(tenantId, { _id: runId })) ?? undefined;
  }

  attemptsOf(tenantId: string, runIds: string[]): Promise<AttemptDocument[]> {
    return this.attempts.find(tenantId, { run_id: { $in: runIds } });
  }

  listRuns(tenantId: string, environmentId: string, query: RunListQuery): Promise<RunDocument[]> {
    return this.runs.find(
      tenantId,
      {
        environment_id: environmentId,
        ...(query.status ? { status: query.status } : {}),
        ...(query.before ? { _id: { $lt: query.before } } : {}),
      },
      { sort: { _id: -1 }, limit: query.limit },
    );
  }

  async attemptCounts(tenantId: string, executor: Executor): Promise<{ queued: number; running: number }> {
    const rows = await this.attempts.aggregate<{ _id: string; count: number }>(
      tenantId,
      { status: { $in: ['queued', 'running'] }, executor },
      [{ $group: { _id: '$status', count: { $sum: 1 } } }],
    );
    const count = (status: string) => rows.find((row) => row._id === status)?.count ?? 0;
    return { queued: count('queued'), running: count('running') };
  }

  /** The newest run of each named schedule of the environment. */
  async lastScheduledRuns(tenantId: string, environmentId: string, schedules: string[]): Promise<Map<string, string>> {
    const last = await Promise.all(
      schedules.map(async (schedule) => {
        const [run] = await this.runs.find(tenantId, { environment_id: environmentId, schedule }, { sort: { _id: -1 }, limit: 1, projection: { _id: 1 } });
        return [schedule, run?._id] as const;
      }),
    );
    return new Map(last.filter((entry): entry is readonly [string, string] => entry[1] !== undefined));
  }
}
