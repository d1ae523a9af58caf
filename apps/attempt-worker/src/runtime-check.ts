/**
 * The Node.js releases the worker runs on: the two LTS lines from 24.11. Its sandbox passes
 * the permission model's flags (`--permission`, `--allow-fs-read`) to each asset's child,
 * which older releases refuse (Node 20 exits with "bad option: --permission" on every
 * attempt); on 26 the permission model also denies the child the network unless its
 * environment's egress is public. Node 25 is not an LTS line, and is not taken.
 */
export const SUPPORTED_NODE = { lines: [{ major: 24, minMinor: 11 }, { major: 26, minMinor: 0 }], range: '>=24.11 <25 || >=26 <27' } as const;

/** The worker's file as `tar xzf envengine-worker-<version>.tgz` unpacks it (npm pack puts a package under `package/`). */
export const UNPACKED_WORKER_ENTRY = 'package/envengine-worker.mjs';

/**
 * Why this Node cannot run the worker, with what to do, or null when it can. `entry`: the
 * worker's file as the hint names it (the one running, relative to the current folder),
 * by default where the packed worker unpacks.
 */
export function nodeVersionProblem(version: string, entry: string = UNPACKED_WORKER_ENTRY): string | null {
  const [major = Number.NaN, minor = Number.NaN] = version.replace(/^v/, '').split('.').map(Number);
  if (SUPPORTED_NODE.lines.some((line) => major === line.major && minor >= line.minMinor)) return null;
  return (
    `The envengine worker needs Node.js ${SUPPORTED_NODE.range}; this is v${version.replace(/^v/, '')}. ` +
    `Install Node.js 26 (https://nodejs.org/en/download, or your package manager's nodejs 26), ` +
    `or run the worker with it without installing: npx -y node@26 ${entry} --pool.`
  );
}
