import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { acquireBuildLock, binaryCacheRoot, type Reporter } from './binaries.ts';
import { findPip } from './pinned-wheels.ts';

/** How to run an installed tool: `python -m <module>` with its packages on PYTHONPATH. */
export interface PinnedPythonTool {
  python: string;
  pythonPath: string;
}

/** A Python tool the suite runs, from PyPI with every wheel hash-pinned in a requirements file. */
export interface PinnedPythonToolSpec {
  /** Its name in messages, e.g. `Schemathesis`. */
  name: string;
  /** Its cache folder's name before the version, e.g. `schemathesis`. */
  slug: string;
  version: string;
  /** `python -m <module> --version` says it runs. */
  module: string;
  /** The requirements file: every wheel, hash-pinned, for CPython 3.11 to 3.13 on Linux x86_64. */
  requirements: string;
}

function installDir(spec: PinnedPythonToolSpec, env: NodeJS.ProcessEnv): string {
  // Keyed by the pinned set, so that a changed pin installs beside the old one.
  const digest = createHash('sha256').update(readFileSync(spec.requirements)).digest('hex').slice(0, 12);
  return join(binaryCacheRoot(env), `${spec.slug}-${spec.version}-${digest}`);
}

function runs(spec: PinnedPythonToolSpec, tool: PinnedPythonTool, env: NodeJS.ProcessEnv): boolean {
  const result = spawnSync(tool.python, ['-m', spec.module, '--version'], { env: { ...env, PYTHONPATH: tool.pythonPath }, stdio: 'ignore' });
  return result.status === 0;
}

/**
 * The tool from the per-user cache, installed there with pip the first time, as the MongoDB
 * wheel is (`--target`, so that no Python environment is touched). Undefined, with the
 * reason reported, where it cannot be had: no pip, pip off (`ENVENGINE_NO_PIP=1`), another
 * platform than Linux x86_64, or a Python the pinned wheels do not fit (3.11-3.13). The
 * install step of `npm test` goes on without it; the test that runs it says why it cannot.
 */
export async function ensurePinnedPythonTool(spec: PinnedPythonToolSpec, report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<PinnedPythonTool | undefined> {
  if (env.ENVENGINE_NO_PIP === '1' || process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  const python = findPip(report, env);
  if (!python) return undefined;
  const dir = installDir(spec, env);
  const tool = { python, pythonPath: dir };
  if (existsSync(dir) && runs(spec, tool, env)) return tool;
  mkdirSync(join(dir, '..'), { recursive: true });
  const lock = `${dir}.lock`;
  await acquireBuildLock(lock, spec.slug, report);
  try {
    if (existsSync(dir) && runs(spec, tool, env)) return tool;
    report(`installing ${spec.name} ${spec.version} (PyPI, every wheel hash-pinned) into ${dir}, once per machine`);
    const staging = `${dir}.installing`;
    rmSync(staging, { recursive: true, force: true });
    const result = spawnSync(
      python,
      ['-m', 'pip', 'install', '--no-deps', '--only-binary=:all:', '--require-hashes', '--disable-pip-version-check', '--no-input', '--target', staging, '-r', spec.requirements],
      { env: { ...env, PIP_NO_INPUT: '1' }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    if (result.status !== 0) {
      rmSync(staging, { recursive: true, force: true });
      report(`pip could not install ${spec.name} ${spec.version} from ${spec.requirements} with ${python} (exit ${result.status}); its wheels are pinned for CPython 3.11-3.13`);
      return undefined;
    }
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    if (!runs(spec, tool, env)) {
      report(`${spec.name} ${spec.version} was installed into ${dir} but does not run with ${python}`);
      return undefined;
    }
    return tool;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** What a run of the tool printed (stdout and stderr, in order) and its exit code. */
export interface PinnedPythonToolRun {
  code: number | null;
  output: string;
}

/** Runs `python <args>` with the tool's packages on PYTHONPATH (before `env`'s own), collecting its output. */
export function runPinnedPythonTool(tool: PinnedPythonTool, args: string[], options: { cwd: string; env?: Record<string, string> }): Promise<PinnedPythonToolRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool.python, args, {
      cwd: options.cwd,
      env: { ...process.env, PYTHONPATH: tool.pythonPath, NO_COLOR: '1', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}
