// Bundles the Temporal workflow code once, at build time, so that the workflow-worker
// starts without running webpack: node tools/build/build-workflows.mjs <entry> <out file>.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';

const [entry, outFile] = process.argv.slice(2);
if (!entry || !outFile) {
  console.error('usage: node tools/build/build-workflows.mjs <workflows entry> <out file>');
  process.exit(2);
}
const workspaceRoot = resolve(import.meta.dirname, '..', '..');
const { code } = await bundleWorkflowCode({ workflowsPath: resolve(workspaceRoot, entry), logger: undefined });
mkdirSync(dirname(resolve(workspaceRoot, outFile)), { recursive: true });
writeFileSync(resolve(workspaceRoot, outFile), code);
