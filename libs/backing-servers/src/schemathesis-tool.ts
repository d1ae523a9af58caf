import { fileURLToPath } from 'node:url';
import type { Reporter } from './binaries.ts';
import { ensurePinnedPythonTool, type PinnedPythonTool } from './pinned-python-tool.ts';

/** The OpenAPI fuzzer the suite runs against the gateway (issue 39), pinned with its every dependency. */
export const SCHEMATHESIS_VERSION = '4.32.5';

/** How to run the installed Schemathesis: `python -m schemathesis.cli` with its packages on PYTHONPATH. */
export type SchemathesisTool = PinnedPythonTool;

/** Schemathesis from the per-user cache, installed there the first time (pinned-python-tool.ts). */
export function ensureSchemathesis(report: Reporter, env: NodeJS.ProcessEnv = process.env): Promise<SchemathesisTool | undefined> {
  const requirements = fileURLToPath(new URL('./schemathesis-requirements.txt', import.meta.url));
  return ensurePinnedPythonTool({ name: 'Schemathesis', slug: 'schemathesis', version: SCHEMATHESIS_VERSION, module: 'schemathesis.cli', requirements }, report, env);
}
