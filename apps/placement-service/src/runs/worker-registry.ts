import type { Connection } from 'mongoose';
import type { Executor, WorkerIdentity } from '@envengine/contracts';
import { TenantScopedModel } from '@envengine/tenant-data';
import { workerSchema, type WorkerDocument } from './run.schema.ts';

/** What a worker says of itself with each heartbeat. */
export type WorkerReport = WorkerIdentity & { credentialId: string | null; draining: boolean; stopped?: boolean };

/**
 * The workers that report to the engine: one row per worker process, written by its
 * heartbeats. What `GET /pool` lists, and what says whether a remote run has a worker to wait for.
 */
export class WorkerRegistry {
  private readonly workers: TenantScopedModel<WorkerDocument>;

  constructor(connection: Connection) {
    this.workers = TenantScopedModel.of(connection, 'Worker', workerSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.workers.ensureIndexes();
  }

  /** The worker's row, made at its first report: what it is and the attempts whose leases it still holds. */
  async report(tenantId: string, worker: WorkerReport, running: string[]): Promise<void> {
    // A worker that exits having drained is gone at once (one that still holds attempts stays until they end or are lost).
    if (worker.stopped && running.length === 0) {
      await this.workers.deleteOne(tenantId, { _id: rowIdOf(tenantId, worker) });
      return;
    }
    const now = new Date();
    await this.workers.updateOne(
      tenantId,
      { _id: rowIdOf(tenantId, worker) },
      { $set: { ...reportedFields(worker, now), running }, $setOnInsert: { started_at: now } },
      { upsert: true },
    );
  }

  /**
   * The worker has just started `attemptId`: alive now, and holding that attempt beside
   * the others its last heartbeat listed (its next heartbeat lists them all again).
   */
  async started(tenantId: string, worker: WorkerReport, attemptId: string): Promise<void> {
    const now = new Date();
    await this.workers.updateOne(
      tenantId,
      { _id: rowIdOf(tenantId, worker) },
      { $set: reportedFields(worker, now), $addToSet: { running: attemptId }, $setOnInsert: { started_at: now } },
      { upsert: true },
    );
  }

  /** Whether a `remote` worker of the tenant that takes attempts (not draining) has reported within `livenessMs`. */
  async hasLiveRemoteWorker(tenantId: string, livenessMs: number): Promise<boolean> {
    const [worker] = await this.workers.find(
      tenantId,
      { executor: 'remote', draining: false, last_heartbeat_at: { $gte: new Date(Date.now() - livenessMs) } },
      { limit: 1, projection: { _id: 1 } },
    );
    return worker !== undefined;
  }

  liveWorkers(tenantId: string, executor: Executor, livenessMs: number): Promise<WorkerDocument[]> {
    return this.workers.find(
      tenantId,
      { executor, last_heartbeat_at: { $gte: new Date(Date.now() - livenessMs) } },
      { sort: { last_heartbeat_at: -1 }, limit: 500 },
    );
  }

  /**
   * The engine runner's slots: the CONCURRENCY of each local runner that reported within
   * `livenessMs` and takes attempts (it reports once per tenant it serves: counted once).
   */
  async liveLocalSlots(livenessMs: number): Promise<number> {
    const live = await this.workers.findAcrossTenants(
      { executor: 'local', draining: false, last_heartbeat_at: { $gte: new Date(Date.now() - livenessMs) } },
      { projection: { _id: 1, concurrency: 1 }, limit: 10_000 },
    );
    const slots = new Map(live.map((worker) => [worker._id.split(':').slice(2).join(':'), worker.concurrency]));
    return [...slots.values()].reduce((sum, concurrency) => sum + concurrency, 0);
  }

  /**
   * Workers of every tenant that reported within `livenessMs`, by executor (the metrics'
   * gauge). The engine's runner reports once per tenant it serves: it is counted once, by
   * its process id (the last part of the registration's id).
   */
  async liveCounts(livenessMs: number): Promise<Record<Executor, number>> {
    const live = await this.workers.findAcrossTenants(
      { last_heartbeat_at: { $gte: new Date(Date.now() - livenessMs) } },
      { projection: { _id: 1, executor: 1 }, limit: 10_000 },
    );
    const distinct = { local: new Set<string>(), remote: new Set<string>() };
    for (const worker of live) distinct[worker.executor].add(worker._id.split(':').slice(2).join(':'));
    return { local: distinct.local.size, remote: distinct.remote.size };
  }
}

function rowIdOf(tenantId: string, worker: WorkerReport): string {
  return `${tenantId}:${worker.executor}:${worker.id}`;
}

/** What each report sets of the worker's row. */
function reportedFields(worker: WorkerReport, now: Date) {
  return {
    name: worker.name,
    executor: worker.executor,
    credential_id: worker.credentialId,
    concurrency: worker.concurrency,
    draining: worker.draining,
    sandbox: worker.sandbox,
    last_heartbeat_at: now,
  };
}
