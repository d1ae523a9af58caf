import type { Attempt, Run } from '@envengine/contracts';
import type { AttemptDocument, RunDocument } from './run.schema.ts';

/** The API's shapes of runs and attempts, from their stored documents. */
export const iso = (date: Date | null | undefined) => (date ? date.toISOString() : null);

export function toAttempt(doc: AttemptDocument): Attempt {
  return {
    id: doc._id,
    run_id: doc.run_id,
    number: doc.number,
    executor: doc.executor,
    status: doc.status,
    worker: doc.worker,
    dispatched_at: doc.dispatched_at.toISOString(),
    started_at: iso(doc.started_at),
    finished_at: iso(doc.finished_at),
    last_heartbeat_at: iso(doc.last_heartbeat_at),
    error: doc.error,
    // The asset its worker last reported working on (at its heartbeat) is `running` until its outcome is recorded.
    assets: doc.assets.map((asset) =>
      doc.status === 'running' && asset.status === 'pending' && asset.key === doc.current_asset ? { ...asset, status: 'running' as const } : { ...asset },
    ),
    reads: (doc.reads ?? []).map((read) => ({ asset: read.asset, upstream: read.upstream, materialization_id: read.materialization_id, environment: read.environment })),
  };
}

export function toRun(doc: RunDocument, attempts: AttemptDocument[], waitingForWorker: boolean): Run {
  return {
    id: doc._id,
    environment_id: doc.environment_id,
    deployment_id: doc.deployment_id,
    trigger: doc.trigger,
    schedule: doc.schedule,
    job: doc.job,
    assets: doc.assets.map((asset) => asset.key),
    status: doc.status,
    max_attempts: doc.max_attempts,
    timeout_seconds: doc.timeout_seconds ?? null,
    attempts: attempts.sort((a, b) => a.number - b.number).map(toAttempt),
    waiting_for_worker: waitingForWorker,
    waiting_for_slot: doc.status === 'queued' && (doc.waiting_for_slot ?? false),
    inserted_at: doc.inserted_at.toISOString(),
    started_at: iso(doc.started_at),
    finished_at: iso(doc.finished_at),
    error: doc.error,
  };
}
