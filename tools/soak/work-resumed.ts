// When work resumed after each of the soak's faults (issue 38's recovery figure), which is
// more than the process serving again: an API whose requests failed during the fault has
// resumed when a request of each failed kind succeeds again, and run execution has resumed
// when the first attempt of the work the fault could stop (under way when it hit, or
// offered after it) has finished successfully. Both come from what happened
// (the load's timeline, the attempts in MongoDB), not from the injector's probe.

/** One request of the load: its kind, when it was sent and answered, and how. */
export interface TimedOperation {
  operation: string;
  startedAt: number;
  endedAt: number;
  /** 2xx: done; failed: 5xx or no answer (the fault's doing); refused: a 4xx, which says nothing of the fault. */
  outcome: 'ok' | 'failed' | 'refused';
}

/** An attempt as MongoDB has it, in epoch milliseconds. */
export interface TimedAttempt {
  tenantId: string;
  executor: 'local' | 'remote';
  status: string;
  /** When it was offered to its queue. */
  dispatchedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

export interface FaultWindow {
  at: number;
  /** The process the fault hit (the injector's target name). */
  target: string;
  /** A pool worker's tenant: only its attempts can be stopped by the fault. */
  tenantId?: string;
}

export interface WorkResumed {
  /** Request kinds that failed after the fault (before the next one), each with when it succeeded again (null: not before the load ended). */
  api: Array<{ operation: string; resumedAfterMs: number | null }>;
  /**
   * When the first attempt of the work the fault could stop finished successfully: on its
   * executor (and a pool worker's tenant), under way at the fault or offered after it
   * (null: none did; undefined: there was no such work).
   */
  runsResumedAfterMs: number | null | undefined;
  /** The later of the two: the fault's recovery as the load felt it (null: some work had not resumed). */
  resumedAfterMs: number | null;
}

/** Which attempts a fault of this target can stop: the engine's runner runs local ones, pool workers remote ones, anything else both. */
function executorsStoppedBy(target: string): ReadonlySet<TimedAttempt['executor']> {
  if (target === 'attempt-worker') return new Set(['local']);
  if (target.startsWith('pool-worker-')) return new Set(['remote']);
  return new Set(['local', 'remote']);
}

/** For each fault, in order, when the work it could stop resumed; `faults` sorted by time, `loadEnd` when the load stopped. */
export function workResumedAfter(faults: readonly FaultWindow[], timeline: readonly TimedOperation[], attempts: readonly TimedAttempt[], loadEnd: number): WorkResumed[] {
  return faults.map((fault, index) => {
    const windowEnd = faults[index + 1]?.at ?? loadEnd;
    const failedKinds = new Map<string, number>();
    for (const entry of timeline) {
      if (entry.outcome !== 'failed' || entry.endedAt < fault.at || entry.endedAt >= windowEnd) continue;
      // The last failure of each kind: the kind has resumed once a request sent after it succeeds.
      failedKinds.set(entry.operation, Math.max(failedKinds.get(entry.operation) ?? 0, entry.startedAt));
    }
    const api = [...failedKinds].sort(([a], [b]) => a.localeCompare(b)).map(([operation, lastFailureSent]) => {
      const firstOk = timeline
        .filter((entry) => entry.operation === operation && entry.outcome === 'ok' && entry.startedAt >= lastFailureSent)
        .reduce<number | null>((first, entry) => (first === null || entry.endedAt < first ? entry.endedAt : first), null);
      return { operation, resumedAfterMs: firstOk === null ? null : firstOk - fault.at };
    });
    const stoppable = executorsStoppedBy(fault.target);
    // The work it could stop: under way when it hit, or offered after it (a lost attempt's retry is a new attempt).
    const affected = attempts.filter(
      (attempt) =>
        stoppable.has(attempt.executor) && (fault.tenantId === undefined || attempt.tenantId === fault.tenantId) && (attempt.finishedAt === null || attempt.finishedAt > fault.at),
    );
    const firstRun = affected
      .filter((attempt) => attempt.status === 'succeeded' && attempt.finishedAt !== null)
      .reduce<number | null>((first, attempt) => (first === null || attempt.finishedAt! < first ? attempt.finishedAt! : first), null);
    const runsResumedAfterMs = affected.length === 0 ? undefined : firstRun === null ? null : firstRun - fault.at;
    const all = [...(runsResumedAfterMs === undefined ? [] : [runsResumedAfterMs]), ...api.map((entry) => entry.resumedAfterMs)];
    return { api, runsResumedAfterMs, resumedAfterMs: all.includes(null) ? null : Math.max(0, ...(all as number[])) };
  });
}
