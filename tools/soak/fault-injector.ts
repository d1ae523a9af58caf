// The soak's faults: at seeded moments, a seeded process of the stack is killed (-9) or
// paused (SIGSTOP, then SIGCONT after longer than a lease), or a pool worker's network to
// the engine (its gateway and Redis, through loopback proxies) is cut or slowed for a while.
// One fault at a time: the next waits until the last one's process serves again, so each
// recovery is timed on its own.
import type { SupervisedProcess } from '@envengine/dev-stack';
import type { LoopbackProxy } from './loopback-proxy.ts';
import type { SeededRandom } from './seeded-random.ts';

export type FaultKind = 'kill' | 'pause' | 'partition' | 'slow link';

export interface FaultRecord {
  at: Date;
  kind: FaultKind;
  target: string;
  /** The process killed or paused; a network fault's worker. */
  pid: number | undefined;
  /** From the fault until the process served again (null: not back when the soak ended). */
  recoveredMs: number | null;
}

/** A pool worker's way to the engine: every proxy it goes through, and the worker behind them. */
export interface NetworkLink {
  proxies: LoopbackProxy[];
  worker: SupervisedProcess;
}

/** Longer than an attempt's lease (15 s): a paused worker's lease runs out while it sleeps. */
const PAUSE_MS = { min: 16_000, max: 20_000 };
/** A cut network lasts as long as a pause: past a lease. */
const PARTITION_MS = PAUSE_MS;
/** A slow link holds each chunk this long, for as long as a pause. */
const LINK_DELAY_MS = { min: 200, max: 2_000 };
/** The share of faults that hit a network link (when there is one). */
const NETWORK_SHARE = 0.2;
/** Between one recovery and the next fault. */
const GAP_MS = { min: 3_000, max: 12_000 };
const READY_POLL_MS = 250;

export class FaultInjector {
  readonly faults: FaultRecord[] = [];

  constructor(
    private readonly targets: () => ReadonlyMap<string, SupervisedProcess>,
    private readonly random: SeededRandom,
    private readonly report: (line: string) => void,
    private readonly links: ReadonlyMap<string, NetworkLink> = new Map(),
  ) {}

  /** Injects faults until `stop` aborts; returns once the last fault's process serves again (or gives up after two minutes). */
  async run(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      await sleep(this.random.between(GAP_MS.min, GAP_MS.max), stop);
      if (stop.aborted) return;
      if (this.links.size > 0 && this.random.next() < NETWORK_SHARE) {
        await this.networkFault();
        continue;
      }
      const targets = this.targets();
      const name = this.random.pick([...targets.keys()].sort());
      const target = targets.get(name)!;
      const kind: FaultKind = this.random.next() < 0.7 ? 'kill' : 'pause';
      const pauseMs = this.random.between(PAUSE_MS.min, PAUSE_MS.max);
      const pid = target.process.pid;
      if (!target.process.running || pid === undefined) continue;
      const record: FaultRecord = { at: new Date(), kind, target: name, pid, recoveredMs: null };
      this.faults.push(record);
      this.report(`${record.at.toISOString()} fault: ${kind} ${name} (pid ${pid})${kind === 'pause' ? ` for ${pauseMs} ms` : ''}`);
      const started = performance.now();
      if (kind === 'kill') {
        process.kill(pid, 'SIGKILL');
        // Until its exit is seen: before that, the old process still counts as running.
        await target.process.waitForExit();
      } else {
        process.kill(pid, 'SIGSTOP');
        await sleep(pauseMs);
        process.kill(pid, 'SIGCONT');
      }
      await this.recovered(record, target, started);
    }
  }

  /** Cuts or slows one pool worker's network for a while, then restores it and waits for the worker to be ready again. */
  private async networkFault(): Promise<void> {
    const name = this.random.pick([...this.links.keys()].sort());
    const link = this.links.get(name)!;
    const kind: FaultKind = this.random.next() < 0.5 ? 'partition' : 'slow link';
    const lastsMs = this.random.between(PARTITION_MS.min, PARTITION_MS.max);
    const delayMs = this.random.between(LINK_DELAY_MS.min, LINK_DELAY_MS.max);
    const record: FaultRecord = { at: new Date(), kind, target: name, pid: link.worker.process.pid, recoveredMs: null };
    this.faults.push(record);
    this.report(`${record.at.toISOString()} fault: ${kind} ${name} for ${lastsMs} ms${kind === 'slow link' ? `, ${delayMs} ms per chunk` : ''}`);
    const started = performance.now();
    for (const proxy of link.proxies) {
      if (kind === 'partition') proxy.partition();
      else proxy.delay(delayMs);
    }
    await sleep(lastsMs);
    for (const proxy of link.proxies) proxy.heal();
    await this.recovered(record, link.worker, started);
  }

  /** Waits until the fault's target serves again, and records and reports how long that took. */
  private async recovered(record: FaultRecord, target: SupervisedProcess, started: number): Promise<void> {
    record.recoveredMs = await this.awaitReady(target, started);
    this.report(`${new Date().toISOString()} ${record.target} serves again ${record.recoveredMs === null ? '(not within two minutes)' : `${record.recoveredMs.toFixed(0)} ms after the fault`}`);
  }

  private async awaitReady(target: SupervisedProcess, started: number): Promise<number | null> {
    // A killed process is restarted by the supervisor; wait until the new one exits no more and serves.
    while (performance.now() - started < 120_000) {
      if (target.process.running && (await target.ready().catch(() => false))) return performance.now() - started;
      await sleep(READY_POLL_MS);
    }
    return null;
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}
