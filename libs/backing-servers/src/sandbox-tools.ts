import { spawnSync } from 'node:child_process';
import { aptInstall, findOnPath, type Reporter } from './binaries.ts';

/** What the OS sandbox of tenants' code needs (docs/design.md#tenants-code-in-an-os-sandbox): command → Debian package. */
const SANDBOX_TOOLS = [
  // The sandbox itself.
  ['bwrap', 'bubblewrap'],
  // Public egress: a user-mode network in the sandbox, and the routes that refuse the host and private ranges.
  ['slirp4netns', 'slirp4netns'],
  ['ip', 'iproute2'],
] as const;

/**
 * What builds the sandbox's seccomp filter at the runner's start: libseccomp's bindings
 * for the system's Python (a module, not a command on PATH).
 */
function hasPythonSeccomp(): boolean {
  return spawnSync('/usr/bin/python3', ['-I', '-c', 'import seccomp'], { stdio: 'ignore' }).status === 0;
}

/**
 * The sandbox's tools: each on PATH, else its Debian package where the process may install
 * it, and likewise python3-seccomp. Returns the path of `bwrap`, or undefined when it could
 * not be had; the runner then refuses to start unless SANDBOX=off (and without
 * python3-seccomp unless ASSET_SECCOMP is `auto` or `off`).
 */
export function bubblewrapBinary(report: Reporter, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const [command, pkg] of SANDBOX_TOOLS) {
    if (!findOnPath(command, env)) aptInstall(pkg, report, env);
  }
  if (!hasPythonSeccomp()) aptInstall('python3-seccomp', report, env);
  return findOnPath('bwrap', env);
}
