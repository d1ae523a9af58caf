import { describe, expect, it } from 'vitest';
import { workResumedAfter, type TimedAttempt, type TimedOperation } from './work-resumed.ts';

const op = (operation: string, startedAt: number, endedAt: number, outcome: TimedOperation['outcome']): TimedOperation => ({ operation, startedAt, endedAt, outcome });
const attempt = (executor: TimedAttempt['executor'], startedAt: number, finishedAt: number, status = 'succeeded', tenantId = 'ten_a'): TimedAttempt => ({
  tenantId,
  executor,
  status,
  dispatchedAt: startedAt - 50,
  startedAt,
  finishedAt,
});

describe('workResumedAfter', () => {
  it('takes the later of the failed kinds succeeding again and a run started after the fault finishing', () => {
    const timeline = [
      op('run', 900, 950, 'ok'),
      op('run', 1_050, 1_400, 'failed'),
      op('secret', 1_100, 1_200, 'failed'),
      op('run', 1_300, 1_900, 'failed'),
      // Sent before the last failure of its kind: not yet evidence that runs are accepted again.
      op('run', 1_200, 2_000, 'ok'),
      op('run', 2_000, 2_500, 'ok'),
      op('secret', 1_250, 1_600, 'ok'),
      // A refusal says nothing of the fault.
      op('deploy', 1_100, 1_150, 'refused'),
    ];
    // Finished before the fault: not the work it could stop. Failed: not work done.
    const attempts = [attempt('local', 700, 950), attempt('local', 1_500, 4_000), attempt('local', 1_600, 3_000, 'failed')];
    const [resumed] = workResumedAfter([{ at: 1_000, target: 'mongodb' }], timeline, attempts, 10_000);
    expect(resumed).toEqual({
      api: [
        { operation: 'run', resumedAfterMs: 1_500 },
        { operation: 'secret', resumedAfterMs: 600 },
      ],
      runsResumedAfterMs: 3_000,
      resumedAfterMs: 3_000,
    });
  });

  it("counts only a fault's own window of failures, and only the executor it could stop", () => {
    const timeline = [op('run', 1_100, 1_200, 'failed'), op('run', 1_300, 1_400, 'ok'), op('run', 5_100, 5_200, 'failed')];
    // A remote attempt that ran through the first fault (dispatched and started before it, finished after), a local one,
    // and after the second: another tenant's remote attempt succeeding, its own still running.
    const attempts = [
      attempt('remote', 900, 1_300),
      attempt('local', 1_500, 2_500),
      { ...attempt('remote', 4_900, 9_000, 'running'), finishedAt: null },
      attempt('remote', 5_100, 5_600, 'succeeded', 'ten_b'),
    ];
    const [first, second] = workResumedAfter(
      [
        { at: 1_000, target: 'attempt-worker' },
        { at: 5_000, target: 'pool-worker-soak-a', tenantId: 'ten_a' },
      ],
      timeline,
      attempts,
      10_000,
    );
    // The engine's runner stops local attempts: the remote one that finished first does not count.
    expect(first).toEqual({ api: [{ operation: 'run', resumedAfterMs: 400 }], runsResumedAfterMs: 1_500, resumedAfterMs: 1_500 });
    // The tenant's remote attempt under way at the second fault never succeeded (the other tenant's pool does not count),
    // and runs failed again with none accepted after: not resumed.
    expect(second).toEqual({ api: [{ operation: 'run', resumedAfterMs: null }], runsResumedAfterMs: null, resumedAfterMs: null });
  });

  it('says there was no work to resume when none of the executor it could stop was under way or offered', () => {
    const [resumed] = workResumedAfter([{ at: 1_000, target: 'attempt-worker' }], [], [attempt('remote', 1_100, 1_300), attempt('local', 500, 900)], 10_000);
    // A retry offered long after the fault is still the work it stopped.
    const [retried] = workResumedAfter([{ at: 1_000, target: 'attempt-worker' }], [], [attempt('local', 30_000, 31_000)], 10_000);
    expect(retried).toEqual({ api: [], runsResumedAfterMs: 30_000, resumedAfterMs: 30_000 });
    expect(resumed).toEqual({ api: [], runsResumedAfterMs: undefined, resumedAfterMs: 0 });
  });
});
