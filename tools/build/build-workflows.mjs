// Bundles the Temporal workflow code once, at build time, so that the workflow-worker
// starts without running webpack: node tools/build/build-workflows.mjs <entry> <out file>.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { bundleWorkflowCode } from '@temporalio/worker';

const [entry, outFile] = process.argv.slice(2);
if (!entry || !outFile) {
  console.error('usage: node tools/build/build-workflows.mjs <workflows entry> <out file>');
  process.exit(2);
}
const workspaceRoot = resolve(import.meta.dirname, '..', '..');
mkdirSync(dirname(resolve(workspaceRoot, outFile)), { recursive: true });
const plain = await bundleWorkflowCode({ workflowsPath: resolve(workspaceRoot, entry), logger: undefined });
writeFileSync(resolve(workspaceRoot, outFile), plain.code);
// A second bundle with the OpenTelemetry workflow interceptors, loaded when tracing is on
// (OTEL_EXPORTER_OTLP_ENDPOINT): with tracing off the workflows carry no interceptor at all.
const traced = await bundleWorkflowCode({
  workflowsPath: resolve(workspaceRoot, entry),
  workflowInterceptorModules: [createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')],
  logger: undefined,
});
writeFileSync(resolve(workspaceRoot, outFile.replace(/\.js$/, '-traced.js')), traced.code);
