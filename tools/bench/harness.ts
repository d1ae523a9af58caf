// Measurement tools shared by the benchmark suites: autocannon runs with per-process CPU
// accounting, interleaved baseline/target pairs, bare baseline processes.
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { freePort, type ManagedProcess } from '@envengine/backing-servers';
import { replicaName, SERVICE_NAMES, type RunningStack, type ServiceName } from '@envengine/dev-stack';

export interface BenchSettings {
  rounds: number;
  duration: number;
  warmup: number;
  connections: number;
}

export interface Target {
  name: string;
  url: string;
  method?: 'GET' | 'POST' | 'PUT';
  headers?: Record<string, string>;
  body?: string;
  /** Varies each request (e.g. its path); autocannon calls it per request. */
  setupRequest?: autocannon.Request['setupRequest'];
}

export interface Measurement {
  name: string;
  /** CPU milliseconds per request, by process, during the measured window. */
  cpuMsPerRequest: Record<string, number>;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function cpuSecondsOf(pid: number | undefined): number {
  return clockTicksOf(pid, 11) / 100;
}

/** CPU seconds (user + system) of a process's children that have ended (and been waited for), from /proc. */
export function endedChildrenCpuSecondsOf(pid: number | undefined): number {
  return clockTicksOf(pid, 13) / 100;
}

/**
 * CPU seconds the whole machine was busy (user, nice, system, irq, softirq, steal), from
 * /proc/stat: what no single process accounts for (a sandbox's processes, which its own
 * init reaps, and the kernel's work for their namespaces) shows as the difference to the
 * processes listed.
 */
export function machineBusyCpuSeconds(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (fields[0]! + fields[1]! + fields[2]! + fields[5]! + fields[6]! + fields[7]!) / 100;
}

/** The user and system clock ticks at `field` and the one after it in /proc/<pid>/stat (counted after the command name). */
function clockTicksOf(pid: number | undefined, field: number): number {
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[field]) + Number(fields[field + 1]);
  } catch {
    return 0;
  }
}

export const median = (numbers: number[]) => [...numbers].sort((a, b) => a - b)[Math.floor(numbers.length / 2)]!;

/** The value below which `p` percent of `numbers` fall (nearest rank). */
export const percentile = (numbers: number[], p: number) => {
  const sorted = [...numbers].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
};

/** Runs `operation` for 0…count-1 with `inFlight` calls at once; answers the seconds it took. */
export async function runConcurrently(count: number, inFlight: number, operation: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      for (let i = next++; i < count; i = next++) await operation(i);
    }),
  );
  return (performance.now() - started) / 1000;
}

export class Bench {
  /** Processes whose CPU use each measurement accounts for. */
  readonly accounted = new Map<string, number | undefined>();
  private readonly children: ChildProcess[] = [];

  constructor(readonly settings: BenchSettings) {}

  private run(target: Target, connections: number, duration: number) {
    return autocannon({
      url: target.url,
      connections,
      duration,
      method: target.method ?? 'GET',
      headers: target.headers,
      body: target.body,
      requests: target.setupRequest ? [{ setupRequest: target.setupRequest }] : undefined,
    });
  }

  async measure(target: Target, connections = this.settings.connections): Promise<Measurement> {
    await this.run(target, connections, this.settings.warmup);
    const cpuBefore = new Map([...this.accounted].map(([process_, pid]) => [process_, cpuSecondsOf(pid)]));
    const result = await this.run(target, connections, this.settings.duration);
    const cpuMsPerRequest = Object.fromEntries(
      [...this.accounted].map(([process_, pid]) => [
        process_,
        ((cpuSecondsOf(pid) - cpuBefore.get(process_)!) * 1000) / Math.max(1, result.requests.total),
      ]),
    );
    const measurement: Measurement = {
      name: target.name,
      cpuMsPerRequest,
      rps: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
    };
    console.error(`  ${target.name}: ${measurement.rps.toFixed(0)} req/s, p50 ${measurement.p50} ms, p99 ${measurement.p99} ms`);
    return measurement;
  }

  /**
   * A baseline and its counterpart measured in alternation, `rounds` times, with the
   * median of each metric: the database server's drift over minutes then weighs on both
   * alike instead of on whichever ran during a slow stretch.
   */
  async measurePair(baseline: Target, target: Target, connections = this.settings.connections): Promise<[Measurement, Measurement]> {
    const runs: [Measurement[], Measurement[]] = [[], []];
    // The order alternates per round, so that a machine getting busier or quieter weighs on both.
    for (let round = 1; round <= this.settings.rounds; round += 1) {
      for (const side of round % 2 === 1 ? [0, 1] as const : [1, 0] as const) {
        const measured = side === 0 ? baseline : target;
        runs[side].push(await this.measure({ ...measured, name: `${measured.name} (round ${round})` }, connections));
      }
    }
    const summarize = (name: string, measurements: Measurement[]): Measurement => ({
      name,
      cpuMsPerRequest: Object.fromEntries(
        Object.keys(measurements[0]!.cpuMsPerRequest).map((process_) => [process_, median(measurements.map((m) => m.cpuMsPerRequest[process_]!))]),
      ),
      rps: median(measurements.map((m) => m.rps)),
      p50: median(measurements.map((m) => m.p50)),
      p99: median(measurements.map((m) => m.p99)),
      non2xx: measurements.reduce((sum, m) => sum + m.non2xx, 0),
      errors: measurements.reduce((sum, m) => sum + m.errors, 0),
    });
    return [summarize(baseline.name, runs[0]), summarize(target.name, runs[1])];
  }

  /** Starts `baselines/<file>` as a child process and waits until it listens. */
  async startBaseline(file: string, env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
    const port = await freePort();
    const child = fork(fileURLToPath(new URL(`./baselines/${file}`, import.meta.url)), [], {
      env: { ...process.env, ...env, PORT: String(port) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.children.push(child);
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`${file} exited with ${code}`)));
    });
    return { url: `http://127.0.0.1:${port}`, child };
  }

  stopBaselines(): void {
    for (const child of this.children) child.kill('SIGTERM');
  }
}

export function resultRow(m: Measurement, baseline?: Measurement): string {
  const ratio = baseline ? `${(m.rps / baseline.rps).toFixed(2)}x ${baseline.name}` : '—';
  return `| ${m.name} | ${m.rps.toFixed(0)} | ${m.p50} | ${m.p99} | ${ratio} | ${m.non2xx}/${m.errors} |`;
}

export const RESULT_HEADER = ['| target | req/s | p50 ms | p99 ms | ratio | non-2xx/errors |', '|---|---:|---:|---:|---|---:|'];

/** CPU milliseconds per request of each accounted process, one row per measurement. */
export function cpuTable(accounted: ReadonlyMap<string, unknown>, measurements: Measurement[]): string[] {
  const names = [...accounted.keys()];
  return [
    `| target | ${names.join(' | ')} | total |`,
    `|---|${names.map(() => '---:').join('|')}|---:|`,
    ...measurements.map((m) => {
      const cells = names.map((name) => m.cpuMsPerRequest[name] ?? 0);
      return `| ${m.name} | ${cells.map((ms) => ms.toFixed(3)).join(' | ')} | ${cells.reduce((a, b) => a + b, 0).toFixed(3)} |`;
    }),
  ];
}

export function rssMegabytes(pid: number | undefined): number {
  if (!pid) return Number.NaN;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  return kb / 1024;
}

/** Every process of a stack by name (each replica, each MongoDB member, each part of the Temporal cluster), for CPU accounting. */
export function stackProcesses({ services, servers }: RunningStack): Map<string, ManagedProcess> {
  const named = new Map<string, ManagedProcess>();
  for (const name of Object.keys(services.replicas) as ServiceName[]) {
    services.replicas[name].forEach((process_, replica) => named.set(replicaName(name, replica), process_));
  }
  const members = servers.mongo.members ?? [];
  if (members.length > 1) members.forEach((member, index) => named.set(`mongod-${index}`, member.process));
  else if (servers.mongo.process) named.set('mongod', servers.mongo.process);
  if ('nodes' in servers.redis) for (const node of servers.redis.nodes) named.set(node.name, node.process);
  else if (servers.redis.process) named.set('redis', servers.redis.process);
  if ('parts' in servers.temporal) for (const part of servers.temporal.parts) named.set(part.name, part.process);
  else if (servers.temporal.process) named.set('temporal', servers.temporal.process);
  return named;
}

/**
 * CPU seconds each process of the stack used between the call and `end()` (PostgreSQL's
 * backends are its children: its row counts the backends that ended; live ones show in
 * the machine's total), with the machine's total.
 */
export function cpuByProcess(stack: RunningStack): { end(): { seconds: Record<string, number>; machine: number; wallSeconds: number } } {
  const processes = stackProcesses(stack);
  const own = (process_: ManagedProcess) => cpuSecondsOf(process_.pid) + endedChildrenCpuSecondsOf(process_.pid);
  const before = new Map([...processes].map(([name, process_]) => [name, own(process_)]));
  const machineBefore = machineBusyCpuSeconds();
  const started = performance.now();
  return {
    end: () => ({
      seconds: Object.fromEntries([...processes].map(([name, process_]) => [name, own(process_) - before.get(name)!])),
      machine: machineBusyCpuSeconds() - machineBefore,
      wallSeconds: (performance.now() - started) / 1000,
    }),
  };
}

/**
 * The pids of a stack's processes by group, for a CPU table: every replica of a deployable
 * in one group, every MongoDB member in one, Temporal's processes in one (PostgreSQL apart).
 */
export function stackProcessGroups(stack: RunningStack, omit: readonly string[] = []): Record<string, Array<number | undefined>> {
  const groupOf = (name: string) =>
    name.startsWith('temporal') ? 'temporal' : name.startsWith('mongod') ? 'mongodb' : name.startsWith('redis') ? 'redis' : (SERVICE_NAMES.find((service) => name === service || name.startsWith(`${service}-`)) ?? name);
  const groups: Record<string, Array<number | undefined>> = {};
  for (const [name, process_] of stackProcesses(stack)) {
    const group = groupOf(name);
    if (!omit.includes(group)) (groups[group] ??= []).push(process_.pid);
  }
  return groups;
}
