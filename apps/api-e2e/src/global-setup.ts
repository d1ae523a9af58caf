import type { TestProject } from 'vitest/node';
import { startTestStack, type StackInfo, type TestStack } from '@envengine/test-harness';
import { RUN_TEST_SETTINGS } from './runs-fixtures.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackInfo;
  }
}

let stack: TestStack | undefined;


export async function setup(project: TestProject): Promise<void> {
  stack = await startTestStack({ env: RUN_TEST_SETTINGS, objectStore: true });
  project.provide('stack', stack.info);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
