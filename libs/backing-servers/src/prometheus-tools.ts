import { aptInstall, findOnPath, type Reporter } from './binaries.ts';

/**
 * `promtool`, which checks deploy/prometheus (its configuration, and its alert rules with
 * their unit tests) in the test suite: on PATH, else Debian's `prometheus` package (which
 * carries it; nothing of Prometheus is started), where the process may install it.
 */
export function promtoolBinary(report: Reporter, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!findOnPath('promtool', env)) aptInstall('prometheus', report, env);
  return findOnPath('promtool', env);
}
