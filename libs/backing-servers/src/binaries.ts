import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

/** Servers built from source with Go, pinned (DESIGN.md §3). */
export const PINNED_GO_BUILDS = {
  temporal: { module: 'github.com/temporalio/cli/cmd/temporal', version: 'v1.5.1' },
  ferretdb: { module: 'github.com/FerretDB/FerretDB/cmd/ferretdb', version: 'v1.24.2' },
} as const;
export type PinnedBinary = keyof typeof PINNED_GO_BUILDS;

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
  const go = findOnPath('go', env) ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) return undefined;
  const pin = PINNED_GO_BUILDS[name];
  const dir = join(target, '..');
  mkdirSync(join(dir, '..'), { recursive: true });
  const lock = `${dir}.lock`;
  const lockDeadline = Date.now() + 30 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (existsSync(target)) return target;
      if (Date.now() > lockDeadline) rmSync(lock, { recursive: true, force: true });
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  try {
    if (existsSync(target)) return target;
    const staging = `${dir}.building`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    report(`building ${name} ${pin.version} with Go into ${dir} (once per machine; takes a few minutes)`);
    const result = spawnSync(go, ['install', `${pin.module}@${pin.version}`], {
      env: { ...env, GOBIN: staging, CGO_ENABLED: env.CGO_ENABLED ?? '0' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (result.status !== 0) throw new Error(`go install ${pin.module}@${pin.version} failed (exit ${result.status})`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    return target;
  } finally {
    rmSync(lock, { recursive: true, force: true });
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
