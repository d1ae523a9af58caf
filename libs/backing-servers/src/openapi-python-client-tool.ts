import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireBuildLock, binaryCacheRoot, type Reporter } from './binaries.ts';
import { findPip } from './pinned-wheels.ts';

/** The Python client generator the suite checks the OpenAPI document with (issue 61), pinned with its every dependency. */
export const OPENAPI_PYTHON_CLIENT_VERSION = '0.29.1';

/** Every wheel, hash-pinned, for CPython 3.11 to 3.13 on Linux x86_64 (`pip install --require-hashes`). */
const REQUIREMENTS = fileURLToPath(new URL('./openapi-python-client-requirements.txt', import.meta.url));

/**
 * How to run the installed generator: `python -m openapi_python_client` with its packages on PYTHONPATH
 * (where the client it generates finds httpx, attrs and python-dateutil too).
 */
export interface OpenApiPythonClientTool {
  python: string;
  pythonPath: string;
}

function installDir(env: NodeJS.ProcessEnv): string {
  // Keyed by the pinned set, so that a changed pin installs beside the old one.
  const digest = createHash('sha256').update(readFileSync(REQUIREMENTS)).digest('hex').slice(0, 12);
  return join(binaryCacheRoot(env), `openapi-python-client-${OPENAPI_PYTHON_CLIENT_VERSION}-${digest}`);
}

function runs(tool: OpenApiPythonClientTool, env: NodeJS.ProcessEnv): boolean {
  const result = spawnSync(tool.python, ['-m', 'openapi_python_client', '--version'], { env: { ...env, PYTHONPATH: tool.pythonPath }, stdio: 'ignore' });
  return result.status === 0;
}

/**
 * openapi-python-client from the per-user cache, installed there with pip the first time, as
 * Schemathesis is (`--target`, so that no Python environment is touched). Undefined, with
 * the reason reported, where it cannot be had: no pip, pip off (`ENVENGINE_NO_PIP=1`),
 * another platform than Linux x86_64, or a Python the pinned wheels do not fit (3.11-3.13).
 * The install step of `npm test` goes on without it; the test that runs it says why it cannot.
 */
export async function ensureOpenApiPythonClient(report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<OpenApiPythonClientTool | undefined> {
  if (env.ENVENGINE_NO_PIP === '1' || process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  const python = findPip(report, env);
  if (!python) return undefined;
  const dir = installDir(env);
  const tool = { python, pythonPath: dir };
  if (existsSync(dir) && runs(tool, env)) return tool;
  mkdirSync(join(dir, '..'), { recursive: true });
  const lock = `${dir}.lock`;
  await acquireBuildLock(lock, 'openapi-python-client', report);
  try {
    if (existsSync(dir) && runs(tool, env)) return tool;
    report(`installing openapi-python-client ${OPENAPI_PYTHON_CLIENT_VERSION} (PyPI, every wheel hash-pinned) into ${dir}, once per machine`);
    const staging = `${dir}.installing`;
    rmSync(staging, { recursive: true, force: true });
    const result = spawnSync(
      python,
      ['-m', 'pip', 'install', '--no-deps', '--only-binary=:all:', '--require-hashes', '--disable-pip-version-check', '--no-input', '--target', staging, '-r', REQUIREMENTS],
      { env: { ...env, PIP_NO_INPUT: '1' }, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    if (result.status !== 0) {
      rmSync(staging, { recursive: true, force: true });
      report(`pip could not install openapi-python-client ${OPENAPI_PYTHON_CLIENT_VERSION} from ${REQUIREMENTS} with ${python} (exit ${result.status}); its wheels are pinned for CPython 3.11-3.13`);
      return undefined;
    }
    rmSync(dir, { recursive: true, force: true });
    renameSync(staging, dir);
    if (!runs(tool, env)) {
      report(`openapi-python-client ${OPENAPI_PYTHON_CLIENT_VERSION} was installed into ${dir} but does not run with ${python}`);
      return undefined;
    }
    return tool;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
