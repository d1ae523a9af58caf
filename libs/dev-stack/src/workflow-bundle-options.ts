import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// A module of its own (Node built-ins only): the workflow-worker's build script imports it
// by path, without the rest of the dev stack.
const WORKSPACE = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');

/**
 * What the deployment workflows' bundle is built from: by the workflow-worker's build
 * (tools/build/build-workflows.mjs), and by the tests and benchmarks that bundle the
 * workflows from source, so that they run the bundle the worker runs.
 *
 * `preloadModules` are evaluated once per workflow thread, and the SDK shares them, frozen,
 * with every workflow that thread runs; every other module of the bundle is evaluated
 * again for each new workflow, which for zod's own modules was a sixth of the workflow
 * thread's time.
 */
export function workflowBundleOptions(): { workflowsPath: string; preloadModules: string[] } {
  return {
    workflowsPath: resolve(WORKSPACE, 'libs/deployment-workflows/src/workflows.ts'),
    preloadModules: [resolve(WORKSPACE, 'libs/deployment-workflows/src/preloaded-modules.ts')],
  };
}
