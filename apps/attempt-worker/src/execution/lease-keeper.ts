import { ENGINE_TENANT_ID, type WorkerIdentity } from '@envengine/contracts';
import type { Logger } from '@envengine/process-kit';
import { WorkerApiError, type HeldAttempt, type WorkerApiClient } from '../worker-api/worker-api-client.ts';

/** Why a running attempt is stopped from outside. */
export type StopReason = 'superseded' | 'drain';

interface Tracked {
  held: HeldAttempt;
  asset: string | null;
  stop: (reason: StopReason) => void;
  /** Where the attempt stands, for the log when it does not stop. */
  describe: () => Record<string, unknown>;
  /** When the server first said its lease was superseded. */
  supersededAt?: number;
  stuckReported?: boolean;
}

/** An attempt still running this long after its lease was superseded is reported once, with where it stands. */
export const STOP_OVERDUE_MS = 10_000;

/**
 * Renews the leases of this worker's running attempts, one heartbeat per tenant per
 * interval. Each worker also reports itself while idle: a pool worker under its tenant (the
 * pool view shows it alive), the engine's runner under `ENGINE_TENANT_ID` (the live
 * workers gauge and the runner's slots count it, busy or not). An
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
    private readonly hooks: {
      /** The worker API refused the worker's credential (401): revoked or never known. */
      onCredentialRefused?: () => void;
      /**
       * Whether the worker can take attempts (its queue's Redis answers). An idle pool worker
       * that cannot does not report itself, so that it is not counted live and a remote run
       * says it waits for a worker.
       */
      canTakeWork?: () => boolean;
    } = {},
  ) {}

  /** Whether the worker API answered the last heartbeat (readiness); true until the first answer of the engine's runner. */
  get reachesWorkerApi(): boolean {
    return this.lastBeatOk ?? this.poolTenant === undefined;
  }

  /** Undefined until the first answer or failure. */
  private lastBeatOk: boolean | undefined;
  private apiDown = false;
  /** Set by `stopAll`: the worker is going away, and an attempt tracked from now on is stopped at once. */
  private stoppedAll: StopReason | undefined;

  /**
   * One heartbeat with nothing running, before the worker takes any job: false when the
   * worker API refuses the credential (401). Other failures (unreachable) are retried by
   * the regular beats and leave this true.
   */
  async credentialAccepted(): Promise<boolean> {
    if (this.poolTenant === undefined) return true;
    try {
      // Reported as draining (taking nothing yet): the worker is not counted live until it can take work.
      await this.api.heartbeat(this.poolTenant, { worker: this.worker, draining: true, attempts: [] });
      this.lastBeatOk = true;
      return true;
    } catch (error) {
      if (error instanceof WorkerApiError && error.status === 401) return false;
      this.log.warn({ err: (error as Error).message }, 'the worker API is not reachable yet; retrying every heartbeat');
      return true;
    }
  }

  start(): void {
    this.timer = setInterval(() => void this.beat(), this.intervalMs);
    void this.beat();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * The last heartbeat, once the worker has drained: it leaves the pool view (or the
   * engine's runner the live count) at once. Best effort: a worker API that does not
   * answer lets the row age out as before.
   */
  async farewell(): Promise<boolean> {
    if (this.running.size > 0) return false;
    try {
      await this.api.heartbeat(this.poolTenant ?? ENGINE_TENANT_ID, { worker: this.worker, draining: true, stopped: true, attempts: [] });
      return true;
    } catch (error) {
      this.log.warn({ err: (error as Error).message }, 'could not tell the engine this worker stopped; it leaves the pool view when its heartbeat ages out');
      return false;
    }
  }

  /**
   * Tracks a started attempt. One tracked after `stopAll` (its start's answer arrived after
   * a second Ctrl-C or the drain deadline) is stopped at once, for the same reason: it would
   * otherwise run on, unstopped, in a worker that is going away.
   */
  track(held: HeldAttempt, stop: (reason: StopReason) => void, describe: () => Record<string, unknown> = () => ({})): void {
    this.running.set(held.attemptId, { held, asset: null, stop, describe });
    if (this.stoppedAll) stop(this.stoppedAll);
  }

  setAsset(attemptId: string, asset: string | null): void {
    const tracked = this.running.get(attemptId);
    if (tracked) tracked.asset = asset;
  }

  untrack(attemptId: string): void {
    this.running.delete(attemptId);
  }

  /** Stops every running attempt (the drain deadline passed, a second Ctrl-C), and every one tracked after. */
  stopAll(reason: StopReason): void {
    this.stoppedAll ??= reason;
    for (const tracked of this.running.values()) tracked.stop(reason);
  }

  get size(): number {
    return this.running.size;
  }

  private async beat(): Promise<void> {
    const byTenant = new Map<string, Tracked[]>();
    const ownTenant = this.poolTenant ?? ENGINE_TENANT_ID;
    if (this.hooks.canTakeWork?.() ?? true) byTenant.set(ownTenant, []);
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
          this.lastBeatOk = true;
          if (this.apiDown) {
            this.apiDown = false;
            this.log.info({}, 'the worker API answers again');
          }
          for (const attemptId of superseded) {
            const tracked = this.running.get(attemptId);
            if (!tracked) continue;
            tracked.stop('superseded');
            if (tracked.supersededAt === undefined) {
              tracked.supersededAt = Date.now();
              this.log.warn({ attempt_id: attemptId }, 'lease superseded (canceled or presumed lost): stopping the attempt');
            } else if (!tracked.stuckReported && Date.now() - tracked.supersededAt > STOP_OVERDUE_MS) {
              // Its job stays taken meanwhile: say once what the attempt still waits for.
              tracked.stuckReported = true;
              this.log.error({ attempt_id: attemptId, ...tracked.describe() }, `attempt still running ${STOP_OVERDUE_MS / 1000} s after its lease was superseded`);
            }
          }
        } catch (error) {
          if (error instanceof WorkerApiError && error.status === 401) {
            this.hooks.onCredentialRefused?.();
            return;
          }
          // The lease lasts several intervals: one missed beat is not a loss. Said once per outage.
          this.lastBeatOk = false;
          if (!this.apiDown) {
            this.apiDown = true;
            this.log.warn({ err: (error as Error).message }, 'cannot reach the worker API: not ready, retrying every heartbeat');
          }
        }
      }),
    );
  }
}
