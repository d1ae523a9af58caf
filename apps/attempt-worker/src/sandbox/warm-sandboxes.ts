// Sandboxed children forked ahead of need, so that starting an asset does not wait for a
// Node process to boot (about 30 ms of an idle machine's time, more under load). Each child
// still runs exactly one asset and is then gone: no memory, module or global state of one
// asset can reach another. A spare is forked for a bundle as soon as a child of that
// bundle is taken, because the next asset (of the same job, or the next run of the same
// deployment) most likely needs the same one.
import type { Egress } from '@envengine/contracts';
import type { SandboxChild } from './os-sandbox.ts';
import { statSync } from 'node:fs';

export interface WarmSandboxesOptions {
  /** Spares kept at most, over all bundles (0: none, every child is forked on demand). */
  capacity: number;
  /** A spare unused for this long is stopped. */
  idleMs: number;
  /** Starts a child that waits for its `run` message (in the worker's sandbox, with its limits, environment and network). */
  fork: (bundleRoot: string, egress: Egress) => SandboxChild;
}

interface Spare {
  child: SandboxChild;
  idleTimer: NodeJS.Timeout;
}

/**
 * A bundle directory by path and identity: a child in the OS sandbox has the directory it
 * was started with bound in, so a directory unpacked anew under the same path (a tampered
 * cache entry fetched again) must not be served by a spare of the old one.
 */
function directoryKey(bundleRoot: string): string {
  try {
    const stats = statSync(bundleRoot);
    return `${stats.dev}:${stats.ino}:${bundleRoot}`;
  } catch {
    return `missing:${bundleRoot}`;
  }
}

const isAlive = ({ process: child, channel }: SandboxChild) => child.exitCode === null && child.signalCode === null && !channel.destroyed && channel.writable;

export class WarmSandboxes {
  /** Ready children by bundle, the least recently used bundle first. */
  private readonly spares = new Map<string, Spare[]>();
  private size = 0;
  private closed = false;

  constructor(private readonly options: WarmSandboxesOptions) {}

  /** A child for one asset of this bundle and network: a spare when one is ready, else started now. */
  take(bundleRoot: string, egress: Egress): SandboxChild {
    const key = `${egress}:${directoryKey(bundleRoot)}`;
    let child: SandboxChild | undefined;
    const ready = this.spares.get(key) ?? [];
    while (child === undefined && ready.length > 0) {
      const spare = ready.shift()!;
      this.size -= 1;
      clearTimeout(spare.idleTimer);
      if (isAlive(spare.child)) child = spare.child;
      else spare.child.process.kill('SIGKILL');
    }
    // Re-inserted, so this bundle counts as the most recently used.
    this.spares.delete(key);
    if (ready.length > 0) this.spares.set(key, ready);
    child ??= this.options.fork(bundleRoot, egress);
    this.forkSpare(key, bundleRoot, egress);
    return child;
  }

  /** Spares ready now (for tests and the worker's log). */
  get ready(): number {
    return this.size;
  }

  /** Stops every spare; later takes fork on demand only. */
  close(): void {
    this.closed = true;
    for (const ready of this.spares.values()) for (const spare of ready) this.stop(spare);
    this.spares.clear();
    this.size = 0;
  }

  private forkSpare(key: string, bundleRoot: string, egress: Egress): void {
    if (this.closed || this.options.capacity === 0) return;
    if (this.size >= this.options.capacity && !this.evictOldest(key)) return;
    const child = this.options.fork(bundleRoot, egress);
    const spare: Spare = { child, idleTimer: setTimeout(() => this.drop(key, spare), this.options.idleMs) };
    spare.idleTimer.unref();
    // A spare that dies while it waits is only dropped; its outcome matters to nobody.
    child.process.once('exit', () => this.drop(key, spare));
    const ready = this.spares.get(key) ?? [];
    this.spares.delete(key);
    this.spares.set(key, [...ready, spare]);
    this.size += 1;
  }

  /** Makes room by stopping the oldest spare of the least recently used other bundle. */
  private evictOldest(exceptKey: string): boolean {
    for (const [key, ready] of this.spares) {
      if (key === exceptKey || ready.length === 0) continue;
      this.drop(key, ready[0]!);
      return true;
    }
    return false;
  }

  private drop(key: string, spare: Spare): void {
    const ready = this.spares.get(key);
    const index = ready?.indexOf(spare) ?? -1;
    if (index === -1) return;
    ready!.splice(index, 1);
    if (ready!.length === 0) this.spares.delete(key);
    this.size -= 1;
    this.stop(spare);
  }

  private stop(spare: Spare): void {
    clearTimeout(spare.idleTimer);
    const { process: child } = spare.child;
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}
