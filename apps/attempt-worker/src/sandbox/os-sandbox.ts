// The operating system's sandbox around each asset's child process
// (docs/design.md#tenants-code-in-an-os-sandbox). Tenants' code is hostile until proven
// otherwise: bubblewrap (Flatpak's sandbox, from Debian's `bubblewrap`) gives the child its
// own user, network, PID, mount, IPC and UTS namespaces, an unprivileged uid, no capabilities
// and no new privileges (bwrap sets PR_SET_NO_NEW_PRIVS), and a file system of only the
// runtime (/usr, read-only), the Node binary, the child script, its bundle (read-only) and a
// size-capped private /tmp. Its network namespace holds only its own loopback: no address of
// the engine host is reachable. An environment with `egress: "public"` gets a user-mode
// network in that namespace (sandbox-network.ts) that reaches other hosts, never the engine
// host, private ranges or link-local addresses. Memory (heap and Buffers alike) and CPU time
// are capped by rlimits set with util-linux's `prlimit`, beside the worker's wall-clock
// limit. A seccomp filter (seccomp-filter.py) refuses the system calls Node has no use for.
// Node's permission model stays inside as a second layer.
import { spawn, spawnSync, type ChildProcess, type SpawnOptions, type SpawnSyncReturns, type StdioOptions } from 'node:child_process';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, copyFileSync, existsSync, lstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { constants as osConstants, tmpdir } from 'node:os';
import { basename, delimiter, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Egress } from '@envengine/contracts';
import type { AssetCgroup, AssetCgroups } from './asset-cgroups.ts';
import { connectPublicEgress, RESOLV_CONF } from './sandbox-network.ts';

export type SandboxMode = 'bwrap' | 'off';

export interface SandboxSettings {
  /** `bwrap` (the default) or `off`, which runs user code under Node's permission model alone. */
  mode: SandboxMode;
  /** Heap limit of the child's V8, and the size of its memory budget beside the runtime's own reservations. */
  memoryMb: number;
  /** CPU time one child may use (RLIMIT_CPU); past it the child is killed with SIGXCPU. */
  cpuSeconds: number;
  /** Size of the child's private /tmp (a tmpfs, counted in memory). */
  tmpMb: number;
  /** The child's whole environment (the worker's own, which holds its credentials, is never inherited). */
  env: Record<string, string>;
  /**
   * Node's permission model inside the OS sandbox (default on). Off only in the tests
   * that prove the OS layer holds by itself.
   */
  nodePermissionModel?: boolean;
  /** Makes a cgroup per child (memory with tmpfs, pids, CPU); null where the host has none and the worker runs without. */
  cgroups: AssetCgroups | null;
  /** The seccomp filter bwrap loads before it execs the child (compiled BPF, seccomp-filter.ts); null or absent: none. */
  seccompFilter?: Buffer | null;
}

/**
 * What V8 and Node reserve before user code runs (code range, thread stacks, the
 * allocator's arenas): RLIMIT_DATA counts these although most is never resident, so the
 * data limit is the user's memory limit on top of them. Measured at 560-580 MB for Node 24 and 26
 * on x86_64 (a child under a 600 MB limit could allocate 32 MB more).
 */
const RUNTIME_DATA_RESERVE_MB = 640;
/** The unprivileged user the sandbox runs as when the worker runs as root: `nobody`. */
const SANDBOX_UID = 65534;
const SANDBOX_GID = 65534;

// Paths inside the sandbox.
export const SANDBOX_NODE = '/sandbox/node';
export const SANDBOX_BUNDLE = '/bundle';

// bwrap's fds beside the child's stdio: the channel (passed through to the child), bwrap's
// info fd (public egress), the seccomp filter (read to its end before the child starts).
const CHANNEL_FD = 3;
const INFO_FD = 4;
const SECCOMP_FD = 5;

// The child's two files sit beside this module in the source tree and beside main.js in
// the build (tools/build/build-app.mjs bundles every `src/**/*-child.ts` and
// `*-child-*.ts` to `dist/<app>/<name>.js`, each one file with its imports inside): the
// child, and the row codec it imports at its first emit or read. From source they are
// bundled the same way when they are staged. The sandbox lets the child read these two
// files, staged side by side under the names the child imports by.
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const CHILD_FILES = [
  { source: 'asset-child', staged: 'asset-child.mjs' },
  { source: 'asset-child-codec', staged: 'asset-child-codec.mjs' },
] as const;
const SANDBOX_CHILD_DIR = '/sandbox/child';
const SANDBOX_CHILD_SCRIPT = `${SANDBOX_CHILD_DIR}/${CHILD_FILES[0].staged}`;

/** The child's files as ES modules, by staged name: the build's, or the sources bundled by esbuild (a dev dependency, present wherever the source runs). */
function childFileSources(): Array<{ name: string; contents: Uint8Array }> {
  const pathOf = (source: string) => fileURLToPath(new URL(`./${source}.${FROM_SOURCE ? 'ts' : 'js'}`, import.meta.url));
  if (!FROM_SOURCE) return CHILD_FILES.map(({ source, staged }) => ({ name: staged, contents: readFileSync(pathOf(source)) }));
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const built = esbuild.buildSync({
    entryPoints: CHILD_FILES.map(({ source, staged }) => ({ in: pathOf(source), out: staged.replace(/\.mjs$/, '') })),
    outdir: '/',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    write: false,
    logLevel: 'silent',
  });
  return built.outputFiles.map((file) => ({ name: basename(file.path), contents: file.contents }));
}

/** Whether the child's Node (this same binary) has the permission model's network switch (Node 25 and later). */
const NODE_KNOWS_ALLOW_NET = process.allowedNodeEnvironmentFlags.has('--allow-net');

/** V8 without the helper threads that would compete for a one-core quota (nodeFlags). */
const ONE_CORE_V8_FLAGS = ['--no-concurrent-recompilation', '--single-threaded-gc'];

/**
 * Node's own flags for the child: the permission model, the heap limit, no addons, and no
 * `node:sqlite` (it opens files around the permission model: a database at `/dev/shm` or
 * the sandbox's root was written past every check).
 */
function nodeFlags(settings: SandboxSettings, bundleRoot: string, childDir: string, egress: Egress): string[] {
  const flags: string[] = [];
  if (settings.nodePermissionModel !== false || settings.mode === 'off') {
    flags.push('--permission', `--allow-fs-read=${bundleRoot}`, ...CHILD_FILES.map(({ staged }) => `--allow-fs-read=${join(childDir, staged)}`));
    if (settings.mode === 'bwrap') flags.push('--allow-fs-read=/tmp', '--allow-fs-write=/tmp');
    // From Node 25 the permission model denies the network too: a second layer under the
    // sandbox's own namespace for `egress: none`, opened for `public` alone (whose user-mode
    // network still reaches neither the engine host nor private ranges). The flag is still
    // "experimental", and Node says so on stderr, which would be a line of every such attempt's log.
    if (egress === 'public' && NODE_KNOWS_ALLOW_NET) flags.push('--allow-net', '--disable-warning=ExperimentalWarning');
  }
  // V8's helper threads for optimising compilation and for collection draw on the child's
  // own CPU quota: at one core or less they only get it throttled. Without them a
  // 100,000-row emit took 28% less CPU and 20% less time (issue 42), at no cost to a start
  // (`--single-threaded`, which saves as much, added 3-7 ms to every start). A child given
  // more than a core keeps them.
  if (settings.cgroups && settings.cgroups.cpuCores <= 1) flags.push(...ONE_CORE_V8_FLAGS);
  // Source maps: a bundle built from TypeScript (or bundled) shows its own sources in a thrown error's stack.
  return [...flags, `--max-old-space-size=${settings.memoryMb}`, '--no-addons', '--no-experimental-sqlite', '--enable-source-maps'];
}

/** What the sandbox binds in from the host, each readable by the sandbox user. */
interface SandboxRuntime {
  node: string;
  /** The child's files (CHILD_FILES), in a directory named by their digest. */
  childDir: string;
  resolvConf: string;
}

let runtime: SandboxRuntime | undefined;

/**
 * The Node binary, the child script and a resolv.conf, staged once per machine and
 * version in a directory every user can search (`<tmp>/envengine-sandbox-<uid>/`): the
 * sandbox's user (`nobody`, as root) must be able to reach what bwrap binds in, and the
 * worker's own install may sit under a directory closed to others (a home, a mktemp
 * directory). The binary is copied under its content's digest: every install of the same
 * Node (each `npm install` of a fresh clone or of the worker package) shares one copy.
 * Named by the install's mtime instead, they grew by 126 MB per install (6.4 GB here after
 * a few days of CI runs).
 */
function sandboxRuntime(): SandboxRuntime {
  if (runtime) return runtime;
  const uid = process.getuid?.() ?? 0;
  const base = join(tmpdir(), `envengine-sandbox-${uid}`);
  mkdirSync(base, { recursive: true, mode: 0o755 });
  const stats = lstatSync(base);
  // A directory someone else made under that name is not trusted with what the sandbox runs.
  if (!stats.isDirectory() || stats.uid !== uid) throw new Error(`${base} exists and is not a directory of this user; remove it`);
  chmodSync(base, 0o755);
  const node = stageNodeBinary(base, process.execPath, process.version);
  const files = childFileSources();
  const digest = createHash('sha256');
  for (const { name, contents } of files) digest.update(name).update('\0').update(contents);
  const childDir = join(base, `asset-child-${digest.digest('hex').slice(0, 16)}`);
  if (!existsSync(childDir)) stageDirectory(childDir, files);
  const resolvConf = join(base, 'resolv.conf');
  if (!existsSync(resolvConf)) stage(resolvConf, (partial) => writeFileSync(partial, RESOLV_CONF, { mode: 0o644 }));
  runtime = { node, childDir, resolvConf };
  return runtime;
}

/**
 * Stages the Node binary at `execPath` in `base` under its version and content digest,
 * unless a copy of it is there; its staged path. A copy, not a link: a link would change
 * with the install, and the name would no longer say what it holds.
 */
export function stageNodeBinary(base: string, execPath: string, version: string): string {
  const node = join(base, `node-${version}-${fileDigest(execPath).slice(0, 16)}`);
  if (!existsSync(node)) stage(node, (partial) => {
    copyFileSync(execPath, partial);
    chmodSync(partial, 0o555);
  });
  return node;
}

/** The SHA-256 of a file's content (hex), read in 4 MiB pieces: about 0.1 s for Node's binary, once per worker. */
function fileDigest(path: string): string {
  const digest = createHash('sha256');
  const piece = Buffer.allocUnsafe(4 * 1024 * 1024);
  const fd = openSync(path, 'r');
  try {
    for (let read = readSync(fd, piece, 0, piece.length, null); read > 0; read = readSync(fd, piece, 0, piece.length, null)) digest.update(piece.subarray(0, read));
  } finally {
    closeSync(fd);
  }
  return digest.digest('hex');
}

/** Writes a file under a temporary name beside `target`, then renames it into place (other workers may race). */
function stage(target: string, write: (partial: string) => void): void {
  const partial = `${target}.${randomBytes(6).toString('hex')}.partial`;
  write(partial);
  renameSync(partial, target);
}

/** Writes `files` into a directory beside `target`, then renames it into place; a worker that raced ahead staged the same files. */
function stageDirectory(target: string, files: ReadonlyArray<{ name: string; contents: Uint8Array }>): void {
  const partial = `${target}.${randomBytes(6).toString('hex')}.partial`;
  mkdirSync(partial);
  // Whatever the umask: the sandbox's user must read them.
  chmodSync(partial, 0o755);
  for (const { name, contents } of files) {
    writeFileSync(join(partial, name), contents);
    chmodSync(join(partial, name), 0o644);
  }
  try {
    renameSync(partial, target);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    if (!existsSync(target)) throw error;
  }
}

/** The child's command inside the sandbox. */
function sandboxedChildCommand(settings: SandboxSettings, egress: Egress): string[] {
  return [SANDBOX_NODE, ...nodeFlags(settings, SANDBOX_BUNDLE, SANDBOX_CHILD_DIR, egress), SANDBOX_CHILD_SCRIPT];
}

/** The bwrap arguments for one child: everything unshared, then only what it needs bound in. */
export function bubblewrapArgs(settings: SandboxSettings, bundleRoot: string, command?: string[], egress: Egress = 'none'): string[] {
  return [
    // Public egress: bwrap says on fd 4 which process holds the namespaces, to give it a network.
    ...(egress === 'public' ? ['--info-fd', String(INFO_FD), '--ro-bind', sandboxRuntime().resolvConf, '/etc/resolv.conf'] : []),
    ...(settings.seccompFilter ? ['--seccomp', String(SECCOMP_FD)] : []),
    '--unshare-all',
    // A user namespace of its own (--unshare-all only tries), in which no further one can be made.
    '--unshare-user',
    '--disable-userns',
    '--die-with-parent',
    '--new-session',
    '--cap-drop', 'ALL',
    '--uid', String(SANDBOX_UID),
    '--gid', String(SANDBOX_GID),
    '--hostname', 'sandbox',
    // The dynamic loader and libraries Node links against; Debian's /lib, /lib64 and /bin are links into /usr.
    '--ro-bind', '/usr', '/usr',
    '--symlink', 'usr/lib', '/lib',
    '--symlink', 'usr/lib64', '/lib64',
    '--symlink', 'usr/bin', '/bin',
    '--ro-bind', sandboxRuntime().node, SANDBOX_NODE,
    '--ro-bind', sandboxRuntime().childDir, SANDBOX_CHILD_DIR,
    '--ro-bind', bundleRoot, SANDBOX_BUNDLE,
    '--proc', '/proc',
    '--dev', '/dev',
    '--size', String(settings.tmpMb * 1024 * 1024), '--tmpfs', '/tmp',
    // Nothing is writable but the capped /tmp: bwrap's root and /dev are tmpfs (host memory) of no size limit.
    '--remount-ro', '/dev',
    '--remount-ro', '/',
    '--chdir', SANDBOX_BUNDLE,
    '--',
    ...(command ?? sandboxedChildCommand(settings, egress)),
  ];
}

/** `prlimit` before bwrap: the child's data segment (heap and Buffers) and CPU time. */
function rlimitArgs(settings: SandboxSettings): string[] {
  const dataBytes = (settings.memoryMb + RUNTIME_DATA_RESERVE_MB) * 1024 * 1024;
  // Soft then hard: SIGXCPU at the soft limit, SIGKILL a second later if it is caught.
  return [`--data=${dataBytes}:${dataBytes}`, `--cpu=${settings.cpuSeconds}:${settings.cpuSeconds + 1}`, '--'];
}

/** Where the child sees its bundle's directory (what a stack trace's paths start with). */
export function bundleRootInSandbox(settings: SandboxSettings, bundleRoot: string): string {
  return settings.mode === 'off' ? bundleRoot : SANDBOX_BUNDLE;
}

/** Where the child sees an entry module of its bundle. */
export function entryUrlInSandbox(settings: SandboxSettings, bundleRoot: string, entryPath: string): string {
  if (settings.mode === 'off') return pathToFileURL(entryPath).href;
  return pathToFileURL(join(SANDBOX_BUNDLE, relative(bundleRoot, entryPath))).href;
}

/** A child started for one asset, and when its network (if it has one) is up: send it nothing before. */
export interface SandboxChild {
  process: ChildProcess;
  /** The channel's socket (the child's fd 3): frames of sandbox-wire.ts both ways, untrusted inward. */
  channel: Socket;
  /** Resolves once the child may run user code; rejects with why its network could not be set up. */
  ready: Promise<void>;
  /** The child's cgroup; its `report` is read (and the cgroup removed) as soon as the child has closed. */
  cgroup: AssetCgroup | null;
}

/**
 * Joins the cgroup's files given first (their count, then each path), then execs the rest:
 * the sandbox's processes are in the cgroup from their first instruction.
 */
const JOIN_CGROUP_SCRIPT =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || { echo "the sandbox could not join its cgroup ($1)" >&2; exit 125; }; shift; n=$((n - 1)); done; exec "$@"';

/**
 * The command that starts `argv` for one child: in its cgroup when there is one, and as
 * root with the sandbox user's identity taken after the cgroup is joined (`setpriv`),
 * since only root may move a process between the worker's cgroup and the child's.
 */
export function launchCommand(argv: readonly string[], cgroup: AssetCgroup | null, asRoot: boolean): { command: string; args: string[]; asSandboxUser: boolean } {
  if (cgroup === null) return { command: argv[0]!, args: argv.slice(1), asSandboxUser: asRoot };
  const dropToSandboxUser = asRoot ? ['setpriv', `--reuid=${SANDBOX_UID}`, `--regid=${SANDBOX_GID}`, '--clear-groups', '--'] : [];
  return { command: '/bin/sh', args: ['-c', JOIN_CGROUP_SCRIPT, 'sh', String(cgroup.procsFiles.length), ...cgroup.procsFiles, ...dropToSandboxUser, ...argv], asSandboxUser: false };
}

function sandboxArgv(settings: SandboxSettings, bundleRoot: string, command: string[] | undefined, egress: Egress): string[] {
  return ['prlimit', ...rlimitArgs(settings), 'bwrap', ...bubblewrapArgs(settings, bundleRoot, command, egress)];
}

/** The sandbox's stdio: the child's own, the channel, then bwrap's info fd and the seccomp filter where they are used. */
function sandboxStdio(settings: SandboxSettings, egress: Egress): StdioOptions {
  return ['ignore', 'pipe', 'pipe', 'pipe', egress === 'public' ? 'pipe' : 'ignore', ...(settings.seccompFilter ? ['pipe' as const] : [])];
}

/**
 * Starts a child for one asset of the bundle at `bundleRoot` (a real path); it waits for
 * its `run` message on its channel (fd 3, which bwrap passes through). With public
 * egress, its user-mode network is set up before `ready` resolves.
 */
export function spawnAssetChild(settings: SandboxSettings, bundleRoot: string, egress: Egress = 'none'): SandboxChild {
  const stdio: SpawnOptions['stdio'] = ['ignore', 'pipe', 'pipe', 'pipe'];
  // A session and process group of its own: a terminal's Ctrl-C or a service manager's
  // SIGTERM to the worker's group reaches the worker alone, which drains its assets (and
  // ends them itself past the deadline). bwrap's --die-with-parent, and the child's exit
  // when its channel closes, still end it with the worker.
  const common: SpawnOptions = { env: { ...settings.env }, stdio, detached: true };
  const cgroup = settings.cgroups?.create() ?? null;
  const asRoot = process.getuid?.() === 0;
  let child: ChildProcess;
  if (settings.mode === 'off') {
    // Without the OS sandbox there is no network namespace: egress is whatever the host has.
    const { childDir } = sandboxRuntime();
    const launch = launchCommand([process.execPath, ...nodeFlags(settings, bundleRoot, childDir, egress), join(childDir, CHILD_FILES[0].staged)], cgroup, false);
    child = spawn(launch.command, launch.args, { ...common, cwd: bundleRoot });
  } else {
    const launch = launchCommand(sandboxArgv(settings, bundleRoot, undefined, egress), cgroup, asRoot);
    child = spawn(launch.command, launch.args, {
      ...common,
      stdio: sandboxStdio(settings, egress),
      cwd: '/',
      // As root, bwrap itself starts as `nobody`, so that the sandbox's uid is unprivileged on the host too.
      ...(launch.asSandboxUser ? { uid: SANDBOX_UID, gid: SANDBOX_GID } : {}),
    });
    if (settings.seccompFilter) {
      const filterPipe = child.stdio.at(SECCOMP_FD) as Writable;
      // A bwrap that died before reading it (EPIPE) is reported by its exit, like any other start failure.
      filterPipe.on('error', () => undefined);
      filterPipe.end(settings.seccompFilter);
    }
  }
  if (cgroup) {
    // Registered first, so that the kernel's counts are read before anyone asks why the child ended.
    child.once('close', () => cgroup.finish());
    child.once('error', () => {
      if (child.pid === undefined) cgroup.finish();
    });
  }
  const ready = settings.mode !== 'off' && egress === 'public' ? connectPublicEgress(child) : Promise.resolve();
  // Nobody may be waiting yet (a spare): the rejection is seen when the child is used.
  ready.catch(() => undefined);
  return { process: child, channel: channelOf(child), ready, cgroup };
}

/** The child's fd 3 as the worker sees it; its errors (a reset by a dying child) are the reader's to see, never unhandled. */
function channelOf(child: ChildProcess): Socket {
  const channel = child.stdio[CHANNEL_FD] as Socket;
  channel.on('error', () => undefined);
  return channel;
}

/**
 * The signal that ended a sandboxed child: bwrap reports a child killed by signal N as
 * exit code 128 + N.
 */
export function signalOfExit(settings: SandboxSettings, code: number | null, signal: NodeJS.Signals | null): NodeJS.Signals | null {
  if (signal !== null || settings.mode === 'off' || code === null || code <= 128) return signal;
  const number = code - 128;
  const name = Object.entries(osConstants.signals).find(([, value]) => value === number)?.[0];
  return (name as NodeJS.Signals | undefined) ?? null;
}

/**
 * Runs `command` in the sandbox of `bundleRoot` to its end, started as each child is
 * (rlimits, its cgroup, bwrap, the seccomp filter): the start-up check, and tests.
 */
export function runInSandbox(settings: SandboxSettings, bundleRoot: string, command: string[]): SpawnSyncReturns<string> {
  const cgroup = settings.cgroups?.create() ?? null;
  const asRoot = process.getuid?.() === 0;
  const launch = launchCommand(sandboxArgv(settings, bundleRoot, command, 'none'), cgroup, asRoot);
  // spawnSync writes to fd 0 alone: the filter goes in as a file open for reading, already unlinked.
  const filterFd = settings.seccompFilter ? openUnlinkedCopy(settings.seccompFilter) : undefined;
  try {
    return spawnSync(launch.command, launch.args, {
      encoding: 'utf8',
      cwd: '/',
      env: { ...settings.env },
      timeout: 30_000,
      stdio: filterFd === undefined ? 'pipe' : ['pipe', 'pipe', 'pipe', 'ignore', 'ignore', filterFd], // at SECCOMP_FD
      ...(launch.asSandboxUser ? { uid: SANDBOX_UID, gid: SANDBOX_GID } : {}),
    });
  } finally {
    if (filterFd !== undefined) closeSync(filterFd);
    cgroup?.finish();
  }
}

/** A descriptor reading `bytes` from a private temporary file that is already gone from the file system. */
function openUnlinkedCopy(bytes: Buffer): number {
  const path = join(tmpdir(), `envengine-seccomp-${randomBytes(6).toString('hex')}.bpf`);
  writeFileSync(path, bytes, { mode: 0o600, flag: 'wx' });
  try {
    return openSync(path, 'r');
  } finally {
    unlinkSync(path);
  }
}

/** Whether `command` is a file in one of PATH's directories. */
function onPath(command: string, path: string | undefined): boolean {
  return (path ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, command)));
}

/**
 * Checks at start-up that the sandbox works here: the tools are installed, user
 * namespaces are allowed, and the sandbox user can read `readableDir` (the bundle cache)
 * and the runtime. Returns null when it does, else a message saying what is missing and
 * how to get it.
 */
export function checkSandbox(settings: SandboxSettings, readableDir: string, path: string | undefined): string | null {
  if (settings.mode === 'off') return null;
  for (const [command, pkg] of [['bwrap', 'bubblewrap'], ['prlimit', 'util-linux']] as const) {
    if (!onPath(command, path)) {
      return `The OS sandbox for tenants' code needs "${command}" (Debian/Ubuntu: apt-get install ${pkg}); or set SANDBOX=off to run user code under Node's permission model alone, which is no protection against hostile code.`;
    }
  }
  try {
    sandboxRuntime();
  } catch (error) {
    return `The OS sandbox's runtime files could not be staged: ${(error as Error).message}.`;
  }
  const asRoot = process.getuid?.() === 0;
  if (settings.cgroups && asRoot && !onPath('setpriv', path)) {
    return `The OS sandbox needs "setpriv" to enter each child's cgroup as root before it becomes the sandbox user (Debian/Ubuntu: apt-get install util-linux).`;
  }
  const probe = runInSandbox(settings, readableDir, [SANDBOX_NODE, '--version']);
  if (probe.status === 0 && probe.stdout.trim() === process.version) return null;
  const said = `${probe.stderr ?? ''}${probe.error ? probe.error.message : ''}`.trim() || `exit code ${probe.status ?? probe.signal}`;
  return (
    `The OS sandbox for tenants' code could not start here (${said}). It needs unprivileged user namespaces ` +
    `(sysctl kernel.unprivileged_userns_clone=1 where that exists; in a container, a seccomp/AppArmor profile that allows them), ` +
    `and the user ${SANDBOX_UID} (nobody) must be able to read ${readableDir} and ${sandboxRuntime().node} ` +
    `(every directory above them searchable). Or set SANDBOX=off to run user code under Node's permission model alone, which is no protection against hostile code.`
  );
}
