// A cgroup of its own for each asset child (docs/design.md#tenants-code-in-an-os-sandbox,
// issue 34): the kernel caps its memory (tmpfs and shared-memory pages count, which rlimits
// do not see), its processes and threads, and its CPU share. cgroup v2 (current Linux hosts)
// and v1 (the memory, pids and cpu hierarchies mounted apart) are both supported; which one
// is read from /proc/self/mountinfo and /proc/self/cgroup. The worker's own cgroup gets a
// directory `envengine-<pid>`, and each child a directory under it, made before the child
// starts and removed once it is gone; the child joins it before it execs anything
// (os-sandbox.ts), so nothing of the sandbox ever runs outside it.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processIsAlive } from '@envengine/process-kit';

export interface AssetCgroupLimits {
  memoryBytes: number;
  /** Processes and threads (Node alone runs about a dozen threads). */
  maxPids: number;
  /** CPU time per wall-clock time, in cores (1 = one core's worth). */
  cpuCores: number;
}

/** One child's cgroup. */
export interface AssetCgroup {
  /** The files the child writes its own pid to, each before it execs the sandbox. */
  readonly procsFiles: readonly string[];
  readonly memoryLimitBytes: number;
  /**
   * Kills every process in the cgroup: the child and anything it left behind (a sandbox's
   * init and its children, a process that outlived its parent), which would otherwise hold
   * the child's pipes open.
   */
  killAll(): void;
  /** Reads what the kernel counted (OOM kills, peak memory) and removes the cgroup; call once the child has exited. */
  finish(): AssetCgroupReport;
  /** What `finish` read, once it ran. */
  readonly report: AssetCgroupReport | undefined;
}

export interface AssetCgroupReport {
  /** Processes the kernel's OOM killer ended in this cgroup: the child ran out of its memory. */
  oomKills: number;
  /** The most memory the cgroup held at once (tmpfs included), when the kernel says. */
  memoryPeakBytes: number | null;
  /** Scheduler periods in which the CPU quota held the child back. */
  cpuThrottledPeriods: number;
}

/** Where the three controllers are, for this process. */
export type CgroupLayout =
  | { version: 2; /** The worker's own cgroup directory. */ base: string }
  | { version: 1; /** The worker's own cgroup directory in each hierarchy. */ memory: string; pids: string; cpu: string };

const CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
/**
 * What the runtime holds resident beside the V8 heap the user's limit is about (code,
 * young generation, thread stacks, the child's own module): an idle sandboxed child is
 * about 45 MB resident.
 */
const RUNTIME_RESIDENT_MB = 128;

/** A child's cgroup memory: its heap limit, its /tmp (tmpfs pages count as memory) and the runtime's own. */
export function assetMemoryCapBytes(memoryMb: number, tmpMb: number): number {
  return (memoryMb + tmpMb + RUNTIME_RESIDENT_MB) * 1024 * 1024;
}
const CPU_PERIOD_US = 100_000;

interface CgroupMount {
  mountPoint: string;
  /** The path of the mount's root inside its hierarchy (`/` unless the mount is of a subtree). */
  root: string;
  fsType: string;
  superOptions: string[];
}

/** The cgroup mounts of /proc/self/mountinfo. */
export function parseCgroupMounts(mountinfo: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (before === undefined || after === undefined) continue;
    const fields = before.split(' ');
    const [fsType, , superOptions = ''] = after.split(' ');
    if (fsType !== 'cgroup' && fsType !== 'cgroup2') continue;
    mounts.push({ mountPoint: unescapeMountPath(fields[4] ?? ''), root: unescapeMountPath(fields[3] ?? '/'), fsType, superOptions: superOptions.split(',') });
  }
  return mounts;
}

function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** /proc/self/cgroup: the v2 path under "", and each v1 controller's path under its name. */
export function parseProcCgroup(text: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!match) continue;
    const [, controllers, path] = match as unknown as [string, string, string];
    if (controllers === '') paths.set('', path);
    for (const controller of controllers.split(',')) if (controller !== '') paths.set(controller, path);
  }
  return paths;
}

/** The directory of `path` (a cgroup path) in a mount whose root may be a subtree. */
function directoryIn(mount: CgroupMount, path: string): string {
  const relative = mount.root === '/' ? path : path.startsWith(mount.root) ? path.slice(mount.root.length) : null;
  const directory = join(mount.mountPoint, relative ?? path);
  return directory.length > 1 ? directory.replace(/\/+$/, '') : directory;
}

/**
 * Which layout serves the three controllers: v2 where its hierarchy has all three
 * available to the worker's cgroup, else v1 where each is mounted; or why neither does.
 */
export function chooseCgroupLayout(
  mountinfo: string,
  procCgroup: string,
  controllersOf: (directory: string) => string[] | null,
): CgroupLayout | { problem: string } {
  const mounts = parseCgroupMounts(mountinfo);
  const paths = parseProcCgroup(procCgroup);
  const unified = mounts.find((mount) => mount.fsType === 'cgroup2');
  const unifiedPath = paths.get('');
  if (unified && unifiedPath !== undefined) {
    const base = directoryIn(unified, unifiedPath);
    const available = controllersOf(base) ?? [];
    if (CONTROLLERS.every((controller) => available.includes(controller))) return { version: 2, base };
  }
  const v1 = Object.fromEntries(
    CONTROLLERS.map((controller) => {
      const mount = mounts.find((candidate) => candidate.fsType === 'cgroup' && candidate.superOptions.includes(controller));
      const path = paths.get(controller);
      return [controller, mount && path !== undefined ? directoryIn(mount, path) : undefined];
    }),
  ) as Record<(typeof CONTROLLERS)[number], string | undefined>;
  if (v1.memory && v1.pids && v1.cpu) return { version: 1, memory: v1.memory, pids: v1.pids, cpu: v1.cpu };
  const missing = CONTROLLERS.filter((controller) => !v1[controller]);
  return {
    problem: unified
      ? `the cgroup v2 hierarchy gives this process's cgroup (${unifiedPath ?? 'unknown'}) no ${CONTROLLERS.join('/')} controllers, and no cgroup v1 hierarchy mounts ${missing.join(', ')}`
      : `no cgroup v2 hierarchy is mounted, and no cgroup v1 hierarchy mounts ${missing.join(', ')}`,
  };
}

function readControllers(directory: string): string[] | null {
  try {
    return readFileSync(join(directory, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  } catch {
    return null;
  }
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}

/** Removes a cgroup directory and, first, any child directory left in it; false while a process is still in it. */
function removeTree(directory: string): boolean {
  try {
    for (const entry of readdirSync(directory, { withFileTypes: true })) if (entry.isDirectory()) removeTree(join(directory, entry.name));
    rmdirSync(directory);
    return true;
  } catch (error) {
    return errorCode(error) === 'ENOENT';
  }
}

const REMOVAL_TRIES = 100;
const REMOVAL_RETRY_MS = 100;

/**
 * Removes a child's cgroup directories. A sandbox killed from outside may still have
 * processes on their way out (its PID namespace's others are killed by the kernel after
 * its init): those left are killed, and the removal is tried again until they are gone.
 */
function removeChildCgroup(dirs: readonly string[], tries = REMOVAL_TRIES): void {
  const left = dirs.filter((dir) => !removeTree(dir));
  if (left.length === 0 || tries === 0) return;
  killProcessesIn(left);
  setTimeout(() => removeChildCgroup(left, tries - 1), REMOVAL_RETRY_MS).unref();
}

/** SIGKILL to every process listed in these cgroup directories. */
function killProcessesIn(dirs: readonly string[]): void {
  for (const dir of dirs) {
    try {
      for (const pid of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }
    } catch {
      // The directory is gone: so are its processes.
    }
  }
}


/** Removes the `envengine-<pid>` directories of workers that are gone (killed before they could clean up). */
function sweepStale(parent: string): void {
  let entries: string[];
  try {
    entries = readdirSync(parent);
  } catch {
    return;
  }
  for (const entry of entries) {
    const match = /^envengine-(\d+)$/.exec(entry);
    if (match && !processIsAlive(Number(match[1]))) removeTree(join(parent, entry));
  }
}

function readCounter(file: string, key: string): number {
  try {
    const line = readFileSync(file, 'utf8').split('\n').find((entry) => entry.startsWith(`${key} `));
    return line === undefined ? 0 : Number(line.slice(key.length + 1));
  } catch {
    return 0;
  }
}

function readNumber(file: string): number | null {
  try {
    const value = Number(readFileSync(file, 'utf8').trim());
    return Number.isFinite(value) ? value : null;
  } catch {
    return null;
  }
}

/** Children's cgroups made by this process so far: each gets a name of its own. */
let made = 0;

/** Every child's cgroup is made by this, under the worker's own. */
export class AssetCgroups {
  private constructor(
    readonly layout: CgroupLayout,
    /** The worker's directory in each hierarchy (one for v2). */
    private readonly workerDirs: string[],
    private readonly limits: AssetCgroupLimits,
  ) {}

  /** The CPU each child may use, in cores (its quota over the period). */
  get cpuCores(): number {
    return this.limits.cpuCores;
  }

  /**
   * Finds the hierarchies, makes the worker's directory in each (after removing those of
   * workers that are gone), and checks that a child's cgroup can be made and limited; or
   * says in one line what this host lacks.
   */
  static open(limits: AssetCgroupLimits, read: { mountinfo?: string; procCgroup?: string } = {}): AssetCgroups | { problem: string } {
    let layout: CgroupLayout | { problem: string };
    try {
      layout = chooseCgroupLayout(read.mountinfo ?? readFileSync('/proc/self/mountinfo', 'utf8'), read.procCgroup ?? readFileSync('/proc/self/cgroup', 'utf8'), readControllers);
    } catch (error) {
      layout = { problem: `/proc could not be read (${errorCode(error)})` };
    }
    if ('problem' in layout) return layout;
    const name = `envengine-${process.pid}`;
    try {
      const workerDirs = layout.version === 2 ? [prepareV2(layout.base, name)] : [layout.memory, layout.pids, layout.cpu].map((parent) => prepareV1(parent, name));
      const cgroups = new AssetCgroups(layout, workerDirs, limits);
      // A child's cgroup made and removed once: the limits this worker will write are accepted here.
      cgroups.create().finish();
      return cgroups;
    } catch (error) {
      const where = layout.version === 2 ? layout.base : layout.memory;
      return { problem: `cgroup v${layout.version} at ${where} cannot be used by this worker (${(error as Error).message})` };
    }
  }

  get version(): 1 | 2 {
    return this.layout.version;
  }

  /** A new cgroup for one child, with the limits set. */
  create(): AssetCgroup {
    const name = `asset-${++made}`;
    const { memoryBytes, maxPids, cpuCores } = this.limits;
    const quota = String(Math.max(1000, Math.round(cpuCores * CPU_PERIOD_US)));
    let dirs: string[];
    if (this.layout.version === 2) {
      const dir = join(this.workerDirs[0]!, name);
      mkdirSync(dir);
      writeFileSync(join(dir, 'memory.max'), String(memoryBytes));
      // Memory past the limit must not go to swap instead (tmpfs pages would).
      if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
      writeFileSync(join(dir, 'pids.max'), String(maxPids));
      writeFileSync(join(dir, 'cpu.max'), `${quota} ${CPU_PERIOD_US}`);
      dirs = [dir];
    } else {
      const [memoryDir, pidsDir, cpuDir] = this.workerDirs.map((parent) => join(parent, name)) as [string, string, string];
      for (const dir of [memoryDir, pidsDir, cpuDir]) mkdirSync(dir);
      writeFileSync(join(memoryDir, 'memory.limit_in_bytes'), String(memoryBytes));
      // With swap accounting, memory plus swap gets the same cap, so nothing is swapped out instead.
      if (existsSync(join(memoryDir, 'memory.memsw.limit_in_bytes'))) writeFileSync(join(memoryDir, 'memory.memsw.limit_in_bytes'), String(memoryBytes));
      writeFileSync(join(pidsDir, 'pids.max'), String(maxPids));
      writeFileSync(join(cpuDir, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
      writeFileSync(join(cpuDir, 'cpu.cfs_quota_us'), quota);
      dirs = [memoryDir, pidsDir, cpuDir];
    }
    const version = this.layout.version;
    let report: AssetCgroupReport | undefined;
    return {
      procsFiles: dirs.map((dir) => join(dir, 'cgroup.procs')),
      memoryLimitBytes: memoryBytes,
      get report() {
        return report;
      },
      killAll() {
        killProcessesIn(dirs);
      },
      finish() {
        if (report) return report;
        const [memoryDir, , cpuDir = memoryDir] = dirs as [string, string?, string?];
        report =
          version === 2
            ? {
                oomKills: readCounter(join(memoryDir, 'memory.events'), 'oom_kill'),
                memoryPeakBytes: readNumber(join(memoryDir, 'memory.peak')),
                cpuThrottledPeriods: readCounter(join(cpuDir, 'cpu.stat'), 'nr_throttled'),
              }
            : {
                oomKills: readCounter(join(memoryDir, 'memory.oom_control'), 'oom_kill'),
                memoryPeakBytes: readNumber(join(memoryDir, 'memory.max_usage_in_bytes')),
                cpuThrottledPeriods: readCounter(join(cpuDir, 'cpu.stat'), 'nr_throttled'),
              };
        removeChildCgroup(dirs);
        return report;
      },
    };
  }

  /** Removes the worker's directories (at exit; a child's cgroup still in use stays, for the next sweep). */
  close(): void {
    for (const dir of this.workerDirs) removeTree(dir);
  }

  /** The worker's directory in each hierarchy (one for v2). */
  get directories(): readonly string[] {
    return this.workerDirs;
  }
}

function prepareV1(parent: string, name: string): string {
  sweepStale(parent);
  const dir = join(parent, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * cgroup v2 lets a cgroup hand controllers to its children only while it holds no process
 * itself (the root excepted). When the worker's own cgroup holds processes (a container's,
 * a systemd service's with Delegate=yes), they move into a leaf `envengine-supervisor`
 * first, as container runtimes do, so that the worker's directory can get the controllers.
 */
function prepareV2(base: string, name: string): string {
  sweepStale(base);
  const enable = `+${CONTROLLERS.join(' +')}`;
  try {
    writeFileSync(join(base, 'cgroup.subtree_control'), enable);
  } catch (error) {
    if (errorCode(error) !== 'EBUSY') throw error;
    const leaf = join(base, 'envengine-supervisor');
    mkdirSync(leaf, { recursive: true });
    for (const pid of readFileSync(join(base, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
      try {
        writeFileSync(join(leaf, 'cgroup.procs'), pid);
      } catch {
        // Exited meanwhile, or a kernel thread: nothing to move.
      }
    }
    writeFileSync(join(base, 'cgroup.subtree_control'), enable);
  }
  const dir = join(base, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'cgroup.subtree_control'), enable);
  return dir;
}
