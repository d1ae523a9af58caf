import type { Logger } from './logger.ts';

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits; a stop that hangs is cut off after
 * `graceMs` so that an orchestrator's kill is never needed. A signal during the stop (a
 * second Ctrl-C) calls `onRepeat`, to hurry it.
 */
export function stopOnSignals(log: Logger, stop: () => Promise<void>, graceMs = 10_000, onRepeat?: () => void): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (onRepeat) {
        log.warn({ signal }, 'stop signal again: stopping at once');
        onRepeat();
      }
      return;
    }
    stopping = true;
    log.info({ signal }, 'stopping');
    const timer = setTimeout(() => {
      log.error({ grace_ms: graceMs }, 'stop took too long; exiting');
      process.exit(1);
    }, graceMs);
    timer.unref();
    stop().then(
      () => {
        log.info('stopped');
        log.flush(() => process.exit(0));
      },
      (error: unknown) => {
        log.error({ err: error instanceof Error ? error.message : String(error) }, 'stop failed');
        log.flush(() => process.exit(1));
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}

/** Whether a process of this pid exists (one of another user counts): for files that name their owner by pid. */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
