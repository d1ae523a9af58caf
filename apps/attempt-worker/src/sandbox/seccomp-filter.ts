// The seccomp filter of each asset's sandbox (docs/design.md#tenants-code-in-an-os-sandbox,
// issue 34): a denylist of system calls (seccomp-filter.py says which and why), compiled to
// BPF once at start-up by libseccomp's own Python bindings (Debian's python3-seccomp) and
// kept in memory; bwrap loads it for every child (`--seccomp`, os-sandbox.ts) just before it
// execs the child.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// Beside this module in the source tree; beside main.js in the build and in the worker
// package, where the build copies it.
const FILTER_SCRIPT = fileURLToPath(new URL('./seccomp-filter.py', import.meta.url));
/**
 * The system's Python, which Debian's python3-seccomp is installed for: a python3 earlier
 * on PATH (a virtualenv, pyenv) does not have it.
 */
const SYSTEM_PYTHON = '/usr/bin/python3';
/** A BPF program is a sequence of instructions of 8 bytes each. */
const BPF_INSTRUCTION_BYTES = 8;

/** The compiled filter, or what this host lacks to build it. */
export function buildSeccompFilter(python = SYSTEM_PYTHON): { filter: Buffer } | { problem: string } {
  // Isolated (-I): no PYTHON* variable or user site-packages decides what is imported, and
  // none of the worker's environment (its credentials) is passed on.
  const built = spawnSync(python, ['-I', FILTER_SCRIPT], { env: {}, timeout: 30_000 });
  if (built.error) {
    const code = (built.error as NodeJS.ErrnoException).code;
    return { problem: code === 'ENOENT' ? `${python} is not installed` : `${python} could not run (${code ?? built.error.message})` };
  }
  const stderr = built.stderr.toString().trim();
  if (/No module named '?seccomp'?/.test(stderr)) return { problem: `${python} has no seccomp module` };
  if (built.status !== 0) return { problem: `${FILTER_SCRIPT} failed: ${stderr.split('\n').at(-1) || `exit code ${built.status ?? built.signal}`}` };
  if (built.stdout.length === 0 || built.stdout.length % BPF_INSTRUCTION_BYTES !== 0) {
    return { problem: `${FILTER_SCRIPT} wrote ${built.stdout.length} bytes, not a BPF program` };
  }
  return { filter: built.stdout };
}
