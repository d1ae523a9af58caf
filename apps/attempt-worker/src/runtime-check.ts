/**
 * The Node.js releases the worker runs on: its sandbox passes Node 24's permission-model
 * flags (`--permission`, `--allow-fs-read`) to each asset's child, which older releases
 * refuse (Node 20 exits with "bad option: --permission" on every attempt).
 */
export const SUPPORTED_NODE = { major: 24, minMinor: 11, range: '>=24.11 <25' } as const;

/** Why this Node cannot run the worker, with what to do, or null when it can. */
export function nodeVersionProblem(version: string): string | null {
  const [major = Number.NaN, minor = Number.NaN] = version.replace(/^v/, '').split('.').map(Number);
  if (major === SUPPORTED_NODE.major && minor >= SUPPORTED_NODE.minMinor) return null;
  return (
    `The envengine worker needs Node.js ${SUPPORTED_NODE.range}; this is v${version.replace(/^v/, '')}. ` +
    `Install Node.js 24 (https://nodejs.org/en/download, or your package manager's nodejs 24), ` +
    `or run the worker with it without installing: npx -y node@24 envengine-worker.mjs --pool.`
  );
}
