import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { PoolCredentialIssued } from '@envengine/contracts';
import { ensureSchemathesis, runPinnedPythonTool, type PinnedPythonToolRun, type SchemathesisTool } from '@envengine/backing-servers';
import { createTenant, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

const SCHEMATHESIS_DIR = fileURLToPath(new URL('../../../tools/schemathesis/', import.meta.url));

/** Fixed, so that a failure is the same failure on the next run (and on CI). */
const SEED = 1;
/** Cases per operation and phase: 46 operations, about a minute on two cores. */
const MAX_EXAMPLES = 12;

/** Schemathesis's exit code and everything it printed (stdout and stderr, in order). */
function fuzz(tool: SchemathesisTool, env: Record<string, string>, args: string[]): Promise<PinnedPythonToolRun> {
  // Its caches (.hypothesis, .schemathesis) go to a directory of this run, not into the clone.
  return runPinnedPythonTool(tool, ['-m', 'schemathesis.cli', '--config-file', `${SCHEMATHESIS_DIR}schemathesis.toml`, 'run', ...args], {
    cwd: mkdtempSync(join(tmpdir(), 'schemathesis-')),
    env: { ...env, SCHEMATHESIS_HOOKS: `${SCHEMATHESIS_DIR}hooks.py` },
  });
}

describe('the OpenAPI document against the server (Schemathesis)', () => {
  let tool: SchemathesisTool;
  let tenant: TestTenant;
  let poolToken: string;

  beforeAll(async () => {
    const installed = await ensureSchemathesis((line) => console.error(`envengine: ${line}`));
    if (!installed) throw new Error('Schemathesis could not be had (the install step above says why): it needs pip and CPython 3.11-3.13 on Linux x86_64.');
    tool = installed;
    tenant = await createTenant(stack, 'schemathesis');
    const issued = await tenant.api.post('/pool/credentials', { label: 'schemathesis' });
    poolToken = PoolCredentialIssued.parse(issued.body.data).token;
  });

  it('finds no request the document allows and the server refuses, no answer the document does not declare, and no server error, in every operation and phase', async () => {
    // The tenant's API token for the public API, its pool token for the worker API (schemathesis.toml, by security scheme).
    const run = await fuzz(tool, { ENVENGINE_API_TOKEN: tenant.token, ENVENGINE_API_TOKEN_ID: tenant.tokenId, ENVENGINE_POOL_TOKEN: poolToken }, [
      `${stack.gatewayUrl}/api/v1/openapi.json`,
      '--checks', 'all',
      '--phases', 'examples,coverage,fuzzing,stateful',
      '--seed', String(SEED),
      '--max-examples', String(MAX_EXAMPLES),
    ]);
    const summary = run.output.slice(run.output.lastIndexOf('SUMMARY'));
    // Its FAILURES section names each failing case with a curl line to replay it.
    const failures = run.output.slice(run.output.indexOf('FAILURES'), run.output.indexOf('WARNINGS'));
    expect(run.code, `${failures}\n${summary}`).toBe(0);
    // Every operation of the document was run, the worker API's and the bundles' included.
    expect(summary).toMatch(/Selected: (\d+)\/\1\n\s*Tested: \1/);
    expect(summary).toMatch(/✅ Stateful/);
    expect(summary).not.toMatch(/Failures:|Errors:/);
    // Its API token lived through the run (POST /tokens and DELETE /tokens/{id} were fuzzed with it).
    expect((await tenant.api.get('/environments')).status).toBe(200);
  }, 600_000);
});
