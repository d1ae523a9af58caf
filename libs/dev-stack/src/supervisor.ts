import { setTimeout as sleep } from 'node:timers/promises';
import type { ExitStatus, ManagedProcess } from '@envengine/backing-servers';
import { backoffDelay } from '@envengine/retry-policy';

/** When a crashed process is started again. */
export interface RestartBackoff {
  /** Delay before the first restart after a crash. Default 500 ms. */
  initialMs: number;
  /** The delay doubles with each crash in a row, up to this. Default 15 s. */
  maxMs: number;
  /** A run that lasted this long ends a crash series: the next delay is `initialMs` again. Default 30 s. */
  resetAfterMs: number;
}

export const DEFAULT_RESTART_BACKOFF: RestartBackoff = { initialMs: 500, maxMs: 15_000, resetAfterMs: 30_000 };

/**
 * After a crash: how many crashes in a row this makes (counting this one), and how long
 * to wait before the restart. `crashesBefore` is the count after the previous crash (0
 * when there was none); `uptimeMs` is how long the run that just crashed lasted.
 */
export function nextRestart(
  crashesBefore: number,
  uptimeMs: number,
  backoff: RestartBackoff = DEFAULT_RESTART_BACKOFF,
): { crashesInARow: number; delayMs: number } {
  const crashesInARow = uptimeMs >= backoff.resetAfterMs ? 1 : crashesBefore + 1;
  return { crashesInARow, delayMs: backoffDelay({ firstMs: backoff.initialMs, factor: 2, maxMs: backoff.maxMs }, crashesInARow) };
}

export interface SupervisedProcess {
  /** Kept running: restarted in place with `ManagedProcess.respawn()`, so the same settings. */
  process: ManagedProcess;
  /** True once the process serves again after a restart, e.g. its `/readyz` answers 200. */
  ready(): Promise<boolean>;
}

export interface SupervisorOptions {
  /** Where the supervisor's one-line messages go. */
  report: (line: string) => void;
  backoff?: Partial<RestartBackoff>;
  /** How often readiness is probed after a restart. Default 250 ms. */
  readyPollMs?: number;
  /** A restarted process still not ready after this long is reported once, and waited for further. Default 60 s. */
  slowReadyMs?: number;
  /**
   * Awaited after the back-off delay, before each restart. Lets a caller act while a crashed
   * process is known to be down (the stack's tests hold a restart until they have).
   */
  beforeRestart?: (name: string) => Promise<void>;
}

function describeExit(status: ExitStatus | undefined): string {
  if (status?.signal) return `signal ${status.signal}`;
  return `code ${status?.code ?? 'unknown'}`;
}

const seconds = (ms: number) => `${Number((ms / 1000).toFixed(2))} s`;

/**
 * Restarts the processes it watches when they exit unexpectedly, with exponential backoff,
 * and logs each crash and each return. An exit after `process.stop()` is intended: that
 * process is left alone from then on, so code that stops a process on purpose (a stack's
 * `stop()`, a test's `restart()`) never races a restart. `stop()` calls off every pending
 * restart.
 */
export class Supervisor {
  private readonly report: (line: string) => void;
  private readonly backoff: RestartBackoff;
  private readonly readyPollMs: number;
  private readonly slowReadyMs: number;
  private readonly beforeRestart: (name: string) => Promise<void>;
  private readonly stopping = new AbortController();
  /** Resolves when the supervisor stops: one promise, so that a long crash series adds no listeners. */
  private readonly stoppedSignal: Promise<void>;
  private readonly loops = new Set<Promise<void>>();
  private readonly restartCounts = new Map<string, number>();

  constructor(options: SupervisorOptions) {
    this.report = options.report;
    this.backoff = { ...DEFAULT_RESTART_BACKOFF, ...options.backoff };
    this.readyPollMs = options.readyPollMs ?? 250;
    this.slowReadyMs = options.slowReadyMs ?? 60_000;
    this.beforeRestart = options.beforeRestart ?? (async () => undefined);
    this.stoppedSignal = new Promise((resolve) => this.stopping.signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  /**
   * Supervises `target` under `name` (used in messages) until it is stopped on purpose or
   * the supervisor stops; nothing once the supervisor has stopped.
   */
  watch(name: string, target: SupervisedProcess): void {
    if (this.stopped) return;
    const loop = this.supervise(name, target).finally(() => this.loops.delete(loop));
    this.loops.add(loop);
  }

  /** How many processes are supervised now (a process stopped on purpose no longer is). */
  get watching(): number {
    return this.loops.size;
  }

  /** How many times the process watched under `name` was restarted. */
  restarts(name: string): number {
    return this.restartCounts.get(name) ?? 0;
  }

  /** Calls off pending restarts and waits until no restart can happen; stopping the processes is their owner's job. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.all(this.loops);
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /** Waits `ms`; false when the supervisor stopped meanwhile. */
  private async pause(ms: number): Promise<boolean> {
    try {
      await sleep(ms, undefined, { signal: this.stopping.signal });
      return true;
    } catch {
      return false;
    }
  }

  private async supervise(name: string, target: SupervisedProcess): Promise<void> {
    const { process: child } = target;
    let crashes = 0;
    let startedAt = Date.now();
    for (;;) {
      await Promise.race([child.waitForExit(), this.stoppedSignal]);
      if (this.stopped || child.stopRequested) return;
      const { crashesInARow, delayMs } = nextRestart(crashes, Date.now() - startedAt, this.backoff);
      crashes = crashesInARow;
      this.report(
        `${name} (pid ${child.pid}) exited unexpectedly with ${describeExit(child.exitStatus)}; ` +
          `restarting it in ${seconds(delayMs)} (crash ${crashes} in a row); log: ${child.logFile}`,
      );
      if (!(await this.pause(delayMs)) || child.stopRequested) return;
      await Promise.race([this.beforeRestart(name), this.stoppedSignal]);
      if (this.stopped || child.stopRequested) return;
      startedAt = Date.now();
      try {
        child.respawn();
      } catch (error) {
        // Counted as one more crash in a row on the next turn (the run is still over).
        this.report(`${name} could not be started again: ${(error as Error).message}`);
        continue;
      }
      this.restartCounts.set(name, this.restarts(name) + 1);
      if (await this.awaitReady(name, target, startedAt)) {
        this.report(`${name} is back (pid ${child.pid}), ready ${seconds(Date.now() - startedAt)} after its restart`);
      }
      // Not ready: it exited again (the next turn handles it) or the supervisor stopped.
    }
  }

  private async awaitReady(name: string, target: SupervisedProcess, startedAt: number): Promise<boolean> {
    const { process: child } = target;
    let warned = false;
    while (!this.stopped && child.running) {
      if (await target.ready().catch(() => false)) return true;
      if (!warned && Date.now() - startedAt > this.slowReadyMs) {
        warned = true;
        this.report(`${name} (pid ${child.pid}) restarted but not ready after ${seconds(this.slowReadyMs)}; still waiting; log: ${child.logFile}`);
      }
      await this.pause(this.readyPollMs);
    }
    return false;
  }
}
