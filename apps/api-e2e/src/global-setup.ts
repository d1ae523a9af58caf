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

let stack: TestStack | undefined;
let coverageDir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  // Every answer the suite gets is checked against the OpenAPI document (ApiClient); the
  // test processes note which operations they drove, reported at the end.
  coverageDir = mkdtempSync(join(tmpdir(), 'envengine-openapi-coverage-'));
  process.env[OPENAPI_COVERAGE_DIR_VARIABLE] = coverageDir;
  // Tokens' last use is written every 200 ms rather than every 30 s, so a test sees it without waiting.
  stack = await startTestStack({ env: { ...RUN_TEST_SETTINGS, ...WEBHOOK_TEST_SETTINGS, TOKEN_USAGE_FLUSH_MS: '200' }, objectStore: true });
  project.provide('stack', stack.info);
}

export async function teardown(): Promise<void> {
  if (coverageDir) {
    const { seen, never } = openApiCoverage(coverageDir);
    const answers = [...seen.values()].reduce((sum, statuses) => sum + statuses.size, 0);
    console.log(`OpenAPI: answers of ${seen.size} operations (${answers} operation-status pairs) checked against the document; never driven: ${never.length === 0 ? 'none' : never.join(', ')}`);
    rmSync(coverageDir, { recursive: true, force: true });
  }
  await stack?.stop();
}
