import { spawnSync } from 'node:child_process';
import { accessSync, constants, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** Servers built from source with Go, pinned (docs/design.md#running-it). */
export const PINNED_GO_BUILDS: Record<PinnedBinary, GoBuildPin> = {
  temporal: { module: 'github.com/temporalio/cli', version: 'v1.5.1', mainPackage: './cmd/temporal' },
  // The cluster profile's Temporal: the server and UI modules at the versions CLI v1.5.1
  // embeds (its go.mod), so both profiles run the same Temporal.
  'temporal-server': {
    module: 'go.temporal.io/server',
    version: 'v1.29.1',
    mainPackage: './cmd/server',
    companions: { 'temporal-sql-tool': './cmd/tools/sql' },
    // The SQL tool applies these versioned schema scripts.
    assets: ['schema/postgresql/v12'],
  },
  'temporal-ui-server': { module: 'github.com/temporalio/ui-server/v2', version: 'v2.42.1', mainPackage: './cmd/server' },
  // SeaweedFS publishes no semver tags to the proxy; this pseudo-version is its release of 2026-11-09.
  weed: { module: 'github.com/seaweedfs/seaweedfs', version: 'v0.0.0-20261109003541-7506e5f91cd6', mainPackage: './weed' },
};

export interface GoBuildPin {
  module: string;
  version: string;
  /** The main package, relative to the module root. */
  mainPackage: string;
  /** More binaries of the same module, built beside it: name → main package. */
  companions?: Record<string, string>;
  /** Module files copied beside the binaries (relative paths kept). */
  assets?: string[];
}
export type PinnedBinary = 'temporal' | 'temporal-server' | 'temporal-ui-server' | 'weed';

export type Reporter = (line: string) => void;

/** Per-user cache, outside any clone, so every clone on a machine shares one build. */
export function binaryCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ENVENGINE_CACHE_DIR) return join(env.ENVENGINE_CACHE_DIR, 'bin');
  const base = env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'envengine', 'bin');
}

export function findOnPath(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export function cachedBinaryPath(name: PinnedBinary, env: NodeJS.ProcessEnv = process.env): string {
  const pin = PINNED_GO_BUILDS[name];
  return join(binaryCacheRoot(env), `${name}-${pin.version}`, name);
}

/**
 * The pinned build from the cache, built with `go install` the first time. A lock
 * directory keeps two processes (say, two test runs) from building at once.
 */
export async function ensureGoBuild(name: PinnedBinary, report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const target = cachedBinaryPath(name, env);
  if (existsSync(target)) return target;
  if (env.ENVENGINE_NO_GO_BUILD === '1') return undefined;
  const go = findOnPath('go', env) ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) return undefined;
  const pin = PINNED_GO_BUILDS[name];
  const dir = join(target, '..');
  mkdirSync(join(dir, '..'), { recursive: true });
  const lock = `${dir}.lock`;
  await acquireBuildLock(lock, name, report);
  try {
    if (existsSync(target)) return target;
    const staging = `${dir}.building`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    report(`building ${name} ${pin.version} with Go into ${dir} (once per machine; takes a few minutes)`);
    buildPinnedPackage(go, pin, staging, name, env);
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    return target;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** `name` from PATH, else its pinned Go build from the per-user cache (built once); with where it came from. */
export async function pathOrGoBuild(
  name: PinnedBinary,
  report: Reporter,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ path: string; source: 'path' | 'go-build' } | undefined> {
  const onPath = findOnPath(name, env);
  if (onPath) return { path: onPath, source: 'path' };
  const built = await ensureGoBuild(name, report, env);
  return built ? { path: built, source: 'go-build' } : undefined;
}

/**
 * Takes the build lock: a directory holding the builder's pid. A lock whose builder is
 * gone (a build interrupted by Ctrl-C) is taken over; a live one is waited for, saying so.
 */
export async function acquireBuildLock(lock: string, name: string, report: Reporter): Promise<void> {
  let waitingSaid = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let owner = Number.NaN;
    try {
      owner = Number(readFileSync(join(lock, 'pid'), 'utf8'));
    } catch {
      // the owner has not written its pid yet
    }
    const ownerless = Number.isNaN(owner) && Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 10_000;
    if ((Number.isInteger(owner) && !processIsAlive(owner)) || ownerless) {
      rmSync(lock, { recursive: true, force: true });
      continue;
    }
    if (!waitingSaid) {
      report(`waiting for another process (pid ${Number.isNaN(owner) ? '?' : owner}) to finish building ${name}`);
      waitingSaid = true;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Installs a Debian package when the process may (root, apt-get present, not refused by
 * ENVENGINE_NO_APT=1). Returns whether the install ran and succeeded.
 */
export function aptInstall(packageName: string, report: Reporter, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.ENVENGINE_NO_APT === '1') return false;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return false;
  const apt = findOnPath('apt-get', env);
  if (!apt) return false;
  report(`installing ${packageName} with apt-get`);
  const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
  let result = spawnSync(apt, ['install', '-y', '--no-install-recommends', packageName], { env: aptEnv, stdio: 'inherit' });
  if (result.status !== 0) {
    spawnSync(apt, ['update'], { env: aptEnv, stdio: 'inherit' });
    result = spawnSync(apt, ['install', '-y', '--no-install-recommends', packageName], { env: aptEnv, stdio: 'inherit' });
  }
  return result.status === 0;
}

/**
 * Builds the pinned release from a copy of its module source, inside its own module, so
 * that its go.mod and go.sum (and replace directives) apply exactly as in its release
 * build. `go install pkg@version` is not used: it asks the proxy for the module's version
 * list (a deprecation check), which some proxies refuse.
 */
function buildPinnedPackage(go: string, pin: GoBuildPin, outputDir: string, name: string, env: NodeJS.ProcessEnv): void {
  const workDir = mkdtempSync(join(tmpdir(), 'envengine-go-build-'));
  const goEnv = { ...env, CGO_ENABLED: env.CGO_ENABLED ?? '0', GOFLAGS: '-mod=mod', GOWORK: 'off' };
  const run = (args: string[], cwd: string) => {
    const result = spawnSync(go, args, { cwd, env: goEnv, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`go ${args.join(' ')} failed (exit ${result.status})`);
    return result.stdout;
  };
  try {
    const download = JSON.parse(run(['mod', 'download', '-json', `${pin.module}@${pin.version}`], workDir)) as { Dir?: string; Error?: string };
    if (!download.Dir) throw new Error(`go mod download ${pin.module}@${pin.version}: ${download.Error ?? 'no source directory'}`);
    const source = join(workDir, 'src');
    cpSync(download.Dir, source, { recursive: true });
    makeWritable(source);
    for (const [binary, mainPackage] of Object.entries({ ...pin.companions, [name]: pin.mainPackage })) {
      run(['build', '-trimpath', '-o', join(outputDir, binary), mainPackage], source);
    }
    for (const asset of pin.assets ?? []) cpSync(join(source, asset), join(outputDir, asset), { recursive: true });
  } finally {
    makeWritable(workDir);
    rmSync(workDir, { recursive: true, force: true });
  }
}

/** The module cache is read-only; a copy of it must be made writable to change or remove it. */
function makeWritable(dir: string): void {
  spawnSync('chmod', ['-R', 'u+w', dir]);
}
