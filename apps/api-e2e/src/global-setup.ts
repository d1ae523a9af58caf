import type { TestProject } from 'vitest/node';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OPENAPI_COVERAGE_DIR_VARIABLE, openApiCoverage, startTestStack, type StackInfo, type TestStack } from '@envengine/test-harness';
import { RUN_TEST_SETTINGS } from './runs-fixtures.ts';
import { WEBHOOK_TEST_SETTINGS } from './webhook-fixtures.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: StackInfo;
  }
}

/**
 * Every project of vitest.config.ts names this file, and vitest runs it once per project:
 * the first call boots the stack, the others share it (held on `globalThis`, since each
 * project may load this module afresh), and the last teardown stops it.
 */
interface SharedStack {
  stack: Promise<TestStack>;
  coverageDir: string;
  projects: number;
}
const holder = globalThis as { envengineSharedStack?: SharedStack };

export async function setup(project: TestProject): Promise<void> {
  if (!holder.envengineSharedStack) {
    // Every answer the suite gets is checked against the OpenAPI document (ApiClient); the
    // test processes note which operations they drove, reported at the end.
    const coverageDir = mkdtempSync(join(tmpdir(), 'envengine-openapi-coverage-'));
    process.env[OPENAPI_COVERAGE_DIR_VARIABLE] = coverageDir;
    // Tokens' last use is written every 200 ms rather than every 30 s, so a test sees it without waiting.
    const stack = startTestStack({ env: { ...RUN_TEST_SETTINGS, ...WEBHOOK_TEST_SETTINGS, TOKEN_USAGE_FLUSH_MS: '200' }, objectStore: true });
    holder.envengineSharedStack = { stack, coverageDir, projects: 0 };
  }
  const shared = holder.envengineSharedStack;
  shared.projects += 1;
  project.provide('stack', (await shared.stack).info);
}

export async function teardown(): Promise<void> {
  const shared = holder.envengineSharedStack;
  if (!shared) return;
  shared.projects -= 1;
  if (shared.projects > 0) return;
  holder.envengineSharedStack = undefined;
  const { seen, never } = openApiCoverage(shared.coverageDir);
  const answers = [...seen.values()].reduce((sum, statuses) => sum + statuses.size, 0);
  console.log(`OpenAPI: answers of ${seen.size} operations (${answers} operation-status pairs) checked against the document; never driven: ${never.length === 0 ? 'none' : never.join(', ')}`);
  rmSync(shared.coverageDir, { recursive: true, force: true });
  await (await shared.stack).stop();
}
