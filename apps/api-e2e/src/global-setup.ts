import type { TestProject } from 'vitest/node';
import { startTestStack, type StackInfo, type TestStack } from '@envengine/test-harness';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackInfo;
  }
}

let stack: TestStack | undefined;

/**
 * Short leases and limits so that a lost worker, an endless loop or an undelivered
 * dispatch is seen in seconds (the defaults are 15 s, 15 min and 5 s).
 */
const RUN_TEST_SETTINGS = {
  ATTEMPT_LEASE_TTL_MS: '3000',
  HEARTBEAT_INTERVAL_MS: '500',
  DISPATCH_RECONCILE_INTERVAL_MS: '1000',
  ASSET_TIMEOUT_MS: '4000',
  ASSET_MEMORY_MB: '128',
};

export async function setup(project: TestProject): Promise<void> {
  stack = await startTestStack({ env: RUN_TEST_SETTINGS });
  project.provide('stack', stack.info);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
