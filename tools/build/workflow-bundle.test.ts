import { bundleWorkflowCode } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { workflowBundleOptions } from '@envengine/dev-stack';

/** Each module of a webpack (development mode) bundle, by id, with the ids it requires. */
function modulesOf(code: string): Map<string, string[]> {
  const starts = [...code.matchAll(/^\/\*\*\*\/ "([^"]+)"$/gm)];
  const modules = new Map<string, string[]>();
  starts.forEach((start, index) => {
    const body = code.slice(start.index, starts[index + 1]?.index ?? code.length);
    modules.set(start[1]!, [...body.matchAll(/__webpack_require__\(\s*(?:\/\*[\s\S]*?\*\/\s*)*"([^"]+)"\s*\)/g)].map((match) => match[1]!));
  });
  return modules;
}

/** `from` and every module it requires, directly or not. */
function closureOf(modules: Map<string, string[]>, from: string): Set<string> {
  const seen = new Set<string>();
  const pending = [from];
  while (pending.length > 0) {
    const id = pending.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    pending.push(...(modules.get(id) ?? []));
  }
  return seen;
}

/**
 * The workflow-worker evaluates every module of its bundle again for each workflow it
 * starts (the SDK isolates workflows' module state), except those it preloads. The
 * contracts' whole entry built every schema of the API each time, most of a workflow
 * task's CPU; the lint keeps value imports on the narrow entry, and this keeps that entry
 * from growing back into the rest, and zod itself evaluated once per thread.
 */
describe('the workflow bundle', () => {
  let code = '';
  beforeAll(async () => {
    ({ code } = await bundleWorkflowCode({ ...workflowBundleOptions(), logger: undefined }));
  }, 120_000);

  it('holds only the contracts modules a workflow input needs', () => {
    const contractsModules = [...code.matchAll(/^\/\*\*\*\/ "[^"]*\/libs\/contracts\/src\/([^"]+)"/gm)].map((match) => match[1]).sort();
    expect(contractsModules).toEqual(['deployment-fields.ts', 'event-actor.ts', 'workflow-inputs.ts']);
  });

  it('preloads every zod module the workflow inputs are built with, so that no workflow evaluates zod again', () => {
    const modules = modulesOf(code);
    const preloadEntry = /exports\.preloadModules = function preloadModules\(\) \{([\s\S]*?)\n\}/.exec(code)?.[1] ?? '';
    const preloaded = new Set<string>();
    for (const [, id] of preloadEntry.matchAll(/"([^"]+)"\)/g)) for (const reached of closureOf(modules, id!)) preloaded.add(reached);
    const zodOfInputs = [...modules]
      .filter(([id]) => id.includes('/libs/contracts/src/'))
      .flatMap(([, required]) => required.filter((id) => id.includes('/node_modules/zod/')));
    expect(zodOfInputs.length).toBeGreaterThan(0);
    expect(zodOfInputs.filter((id) => !preloaded.has(id))).toEqual([]);
  });
});
