import { resolve } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { WORKSPACE_ROOT } from '@envengine/dev-stack';

/**
 * The workflow-worker evaluates every module of its bundle again for each workflow it
 * starts (the SDK isolates workflows' module state). The contracts' whole entry built
 * every schema of the API each time, most of a workflow task's CPU; the lint keeps value
 * imports on the narrow entry, and this keeps that entry from growing back into the rest.
 */
describe('the workflow bundle', () => {
  it('holds only the contracts modules a workflow input needs', async () => {
    const { code } = await bundleWorkflowCode({ workflowsPath: resolve(WORKSPACE_ROOT, 'libs/deployment-workflows/src/workflows.ts'), logger: undefined });
    const contractsModules = [...code.matchAll(/^\/\*\*\*\/ "[^"]*\/libs\/contracts\/src\/([^"]+)"/gm)].map((match) => match[1]).sort();
    expect(contractsModules).toEqual(['deployment-fields.ts', 'event-actor.ts', 'workflow-inputs.ts']);
  }, 120_000);
});
