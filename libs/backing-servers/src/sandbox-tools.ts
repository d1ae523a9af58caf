import { aptInstall, findOnPath, type Reporter } from './binaries.ts';

/**
 * bubblewrap, the OS sandbox the engine's runner puts every asset in (DESIGN.md §6):
 * `bwrap` on PATH, else Debian's `bubblewrap` package where the process may install it.
 * Undefined when neither works; the runner then refuses to start unless SANDBOX=off.
 */
export function bubblewrapBinary(report: Reporter, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const onPath = findOnPath('bwrap', env);
  if (onPath) return onPath;
  if (!aptInstall('bubblewrap', report, env)) return undefined;
  return findOnPath('bwrap', env) ?? '/usr/bin/bwrap';
}
