import type { ServiceName } from '@envengine/dev-stack';

/**
 * Restarts held by a test until it has acted while the process is down (no race with the
 * supervisor's back-off delay): `beforeRestart` goes to `superviseStack`; `hold` before a
 * kill, `release` to let the restart go.
 */
export function restartHolds() {
  const held = new Map<string, { released: Promise<void>; release: () => void }>();
  return {
    hold(name: ServiceName): void {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      held.set(name, { released, release });
    },
    release(name: ServiceName): void {
      held.get(name)!.release();
    },
    async beforeRestart(name: string): Promise<void> {
      await held.get(name)?.released;
    },
  };
}
