import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '@envengine/process-kit';
import type { WorkerApiClient } from '../worker-api/worker-api-client.ts';
import { LeaseKeeper, STOP_OVERDUE_MS } from './lease-keeper.ts';

const worker = { id: 'worker-test-1', name: 'w', executor: 'remote', concurrency: 1, sandbox: 'bwrap' } as const;

/** A logger that keeps each line's level, message and fields. */
function recordingLogger() {
  const lines: Array<{ level: string; msg: string; fields: Record<string, unknown> }> = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => void lines.push({ level, msg, fields });
  return { lines, log: { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') } as unknown as Logger };
}

describe('LeaseKeeper', () => {
  afterEach(() => vi.useRealTimers());

  it('stops a superseded attempt, says so once, and reports once where it stands when it has not stopped in time', async () => {
    vi.useFakeTimers();
    const heartbeat = vi.fn(async () => ({ superseded: ['att_1'] }));
    const { lines, log } = recordingLogger();
    const leases = new LeaseKeeper({ heartbeat } as unknown as WorkerApiClient, worker, log, 500, 'ten_1');
    const stop = vi.fn();
    leases.track({ tenantId: 'ten_1', attemptId: 'att_1', lease: 'lease-1' }, stop, () => ({ phase: 'running asset totals' }));
    leases.start();
    await vi.advanceTimersByTimeAsync(STOP_OVERDUE_MS + 2_000);
    leases.stop();

    // Told again at every beat (stopping is idempotent), said in the log once.
    expect(stop.mock.calls.length).toBeGreaterThan(10);
    expect(stop).toHaveBeenCalledWith('superseded');
    expect(lines.filter((line) => line.msg.startsWith('lease superseded'))).toHaveLength(1);
    const overdue = lines.filter((line) => line.level === 'error');
    expect(overdue).toEqual([
      { level: 'error', msg: `attempt still running ${STOP_OVERDUE_MS / 1000} s after its lease was superseded`, fields: { attempt_id: 'att_1', phase: 'running asset totals' } },
    ]);
  });

  it('says nothing more once the attempt has stopped', async () => {
    vi.useFakeTimers();
    const { lines, log } = recordingLogger();
    const leases = new LeaseKeeper({ heartbeat: async () => ({ superseded: ['att_1'] }) } as unknown as WorkerApiClient, worker, log, 500, 'ten_1');
    leases.track({ tenantId: 'ten_1', attemptId: 'att_1', lease: 'lease-1' }, () => leases.untrack('att_1'));
    leases.start();
    await vi.advanceTimersByTimeAsync(STOP_OVERDUE_MS + 2_000);
    leases.stop();
    expect(lines.map((line) => line.msg)).toEqual(['lease superseded (canceled or presumed lost): stopping the attempt']);
  });

  it('stops an attempt tracked after stopAll at once: a start answered after a second Ctrl-C is handed back, not run on', () => {
    const { log } = recordingLogger();
    const leases = new LeaseKeeper({ heartbeat: async () => ({ superseded: [] }) } as unknown as WorkerApiClient, worker, log, 500, 'ten_1');
    const before = vi.fn();
    leases.track({ tenantId: 'ten_1', attemptId: 'att_1', lease: 'lease-1' }, before);
    leases.stopAll('drain');
    expect(before).toHaveBeenCalledWith('drain');
    const after = vi.fn();
    leases.track({ tenantId: 'ten_1', attemptId: 'att_2', lease: 'lease-2' }, after);
    expect(after).toHaveBeenCalledWith('drain');
  });
});
