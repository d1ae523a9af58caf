import type { Executor, RunStatus } from '@envengine/contracts';
import { newId } from '@envengine/resource-ids';
import { ApiError } from '@envengine/service-kit';
import { injectTraceContext } from '@envengine/tracing';
import type { AttemptDocument } from './run.schema.ts';

/** A run that has not ended. */
export const ACTIVE_RUN: RunStatus[] = ['queued', 'running'];

/** A canceled attempt's assets that had not finished (pending or running) say so: the update and its array filter. */
export const CANCELED_ASSETS = { 'assets.$[unfinished].status': 'canceled' } as const;
export const UNFINISHED_ASSETS = [{ 'unfinished.status': { $in: ['pending', 'running'] } }];

/**
 * A new attempt of a run, queued, for the assets it is to run. It keeps the trace context it
 * was made in (null when tracing is off): its queue add, made by whichever request, sweep or
 * replica admits it, continues that trace.
 */
export function newAttempt(
  runId: string,
  environmentId: string,
  number: number,
  executor: Executor,
  assetKeys: string[],
  now: Date,
  waitingForSlot = false,
): Omit<AttemptDocument, 'tenant_id'> {
  return {
    _id: newId('att', now.getTime()),
    run_id: runId,
    environment_id: environmentId,
    number,
    executor,
    status: 'queued',
    waiting_for_slot: waitingForSlot,
    worker: null,
    worker_id: null,
    lease: null,
    start_key: null,
    dispatch_seq: 0,
    dispatched_at: now,
    trace_parent: injectTraceContext({})['traceparent'] ?? null,
    enqueued_at: null,
    admitted_at: null,
    started_at: null,
    finished_at: null,
    last_heartbeat_at: null,
    current_asset: null,
    error: null,
    assets: assetKeys.map((key) => ({ key, status: 'pending', materialization_id: null, error: null })),
  };
}

/** Why a worker's write about an attempt is refused: its lease is not the attempt's any more. */
export function leaseSuperseded(attempt: AttemptDocument): ApiError {
  return new ApiError(
    'lease_superseded',
    attempt.status === 'running'
      ? `Attempt "${attempt._id}" is held under a newer lease; this worker's writes are refused.`
      : `Attempt "${attempt._id}" is ${attempt.status}; this worker's writes are refused.`,
  );
}
