// Bundles the Temporal workflow code once, at build time, so that the workflow-worker
// starts without running webpack: node tools/build/build-workflows.mjs <out file>.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowBundleOptions } from '../../libs/dev-stack/src/workflow-bundle-options.ts';

const [outFile] = process.argv.slice(2);
if (!outFile) {
  console.error('usage: node tools/build/build-workflows.mjs <out file>');
  process.exit(2);
}
const workspaceRoot = resolve(import.meta.dirname, '..', '..');
mkdirSync(dirname(resolve(workspaceRoot, outFile)), { recursive: true });
const options = workflowBundleOptions();
const plain = await bundleWorkflowCode({ ...options, logger: undefined });
writeFileSync(resolve(workspaceRoot, outFile), plain.code);
// A second bundle with the OpenTelemetry workflow interceptors, loaded when tracing is on
// (OTEL_EXPORTER_OTLP_ENDPOINT): with tracing off the workflows carry no interceptor at all.
const traced = await bundleWorkflowCode({
  ...options,
  workflowInterceptorModules: [createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')],
  logger: undefined,
});
writeFileSync(resolve(workspaceRoot, outFile.replace(/\.js$/, '-traced.js')), traced.code);
