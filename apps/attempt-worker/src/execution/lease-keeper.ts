import type { WorkerIdentity } from '@envengine/contracts';
import type { Logger } from '@envengine/service-kit';
import type { HeldAttempt, WorkerApiClient } from '../worker-api/worker-api-client.ts';

/** Why a running attempt is stopped from outside. */
export type StopReason = 'superseded' | 'drain';

interface Tracked {
  held: HeldAttempt;
  asset: string | null;
  stop: (reason: StopReason) => void;
}

/**
 * Renews the leases of this worker's running attempts, one heartbeat per tenant per
 * interval (a pool worker also reports while idle, so the pool view shows it alive). An
 * attempt whose lease the server no longer honours (canceled, presumed lost) is stopped
 * at once: its user code is killed and nothing more is reported for it.
 */
export class LeaseKeeper {
  private readonly running = new Map<string, Tracked>();
  private timer: NodeJS.Timeout | undefined;
  draining = false;

  constructor(
    private readonly api: WorkerApiClient,
    private readonly worker: WorkerIdentity,
    private readonly log: Logger,
    private readonly intervalMs: number,
    /** A pool worker's tenant is its token's; it reports while idle too. */
    private readonly poolTenant: string | undefined,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.beat(), this.intervalMs);
    void this.beat();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  track(held: HeldAttempt, stop: (reason: StopReason) => void): void {
    this.running.set(held.attemptId, { held, asset: null, stop });
  }

  setAsset(attemptId: string, asset: string | null): void {
    const tracked = this.running.get(attemptId);
    if (tracked) tracked.asset = asset;
  }

  untrack(attemptId: string): void {
    this.running.delete(attemptId);
  }

  /** Stops every running attempt (the drain deadline passed). */
  stopAll(reason: StopReason): void {
    for (const tracked of this.running.values()) tracked.stop(reason);
  }

  get size(): number {
    return this.running.size;
  }

  private async beat(): Promise<void> {
    const byTenant = new Map<string, Tracked[]>();
    if (this.poolTenant !== undefined) byTenant.set(this.poolTenant, []);
    for (const tracked of this.running.values()) {
      byTenant.set(tracked.held.tenantId, [...(byTenant.get(tracked.held.tenantId) ?? []), tracked]);
    }
    await Promise.all(
      [...byTenant].map(async ([tenantId, attempts]) => {
        try {
          const { superseded } = await this.api.heartbeat(tenantId, {
            worker: this.worker,
            draining: this.draining,
            attempts: attempts.map(({ held, asset }) => ({ id: held.attemptId, lease: held.lease, asset })),
          });
          for (const attemptId of superseded) {
            const tracked = this.running.get(attemptId);
            if (!tracked) continue;
            this.log.warn({ attempt_id: attemptId }, 'lease superseded (canceled or presumed lost): stopping the attempt');
            tracked.stop('superseded');
          }
        } catch (error) {
          // The lease lasts several intervals: one missed beat is not a loss.
          this.log.warn({ err: (error as Error).message }, 'heartbeat failed; retrying next interval');
        }
      }),
    );
  }
}
