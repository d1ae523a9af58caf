import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ensureOpenApiPythonClient, runPinnedPythonTool, type OpenApiPythonClientTool } from '@envengine/backing-servers';
import { createTenant, makeBundle, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

const DRIVER = fileURLToPath(new URL('./generated-clients/drive_python_client.py', import.meta.url));

/**
 * The warnings openapi-python-client may give for this document: downloads of raw bytes (a
 * bundle, a Parquet file) are left to the caller's httpx, and the bundle upload's
 * `application/gzip` entry is skipped for its `application/octet-stream` one (the same bytes).
 * Any other warning (a schema it could not process, an endpoint it did not generate, a
 * duplicate name) fails the test.
 */
const EXPECTED_WARNINGS = [
  'WARNING parsing GET /environments/{name}/assets/{key}/materializations/{id}/data within outputs.',
  'WARNING parsing GET /environments/{name}/assets/{key}/materializations/{id}/data within outputs.',
  'WARNING parsing GET /worker/bundles/{ref} within worker_api.',
  'WARNING parsing POST /bundles within deployments.',
];

describe('a Python client generated with openapi-python-client from the served document', () => {
  let tool: OpenApiPythonClientTool;
  let tenant: TestTenant;
  const dir = mkdtempSync(join(tmpdir(), 'envengine-python-client-'));

  beforeAll(async () => {
    const installed = await ensureOpenApiPythonClient((line) => console.error(`envengine: ${line}`));
    if (!installed) throw new Error('openapi-python-client could not be had (the install step above says why): it needs pip and CPython 3.11-3.13 on Linux x86_64.');
    tool = installed;
    tenant = await createTenant(stack, 'python-client');
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('generates with no dropped schema or endpoint, and uploads a bundle, deploys, runs and reads the run unchanged', async () => {
    const generated = await runPinnedPythonTool(
      tool,
      ['-m', 'openapi_python_client', 'generate', '--url', `${stack.gatewayUrl}/api/v1/openapi.json`, '--meta', 'none', '--output-path', join(dir, 'envengine_client')],
      { cwd: dir, env: { PYTHONDONTWRITEBYTECODE: '1' } },
    );
    expect(generated.code, generated.output).toBe(0);
    expect(generated.output).not.toMatch(/Unable to process schema|will not be generated|duplicate|conflict/i);
    const warnings = generated.output.split('\n').filter((line) => line.startsWith('WARNING'));
    expect(warnings.sort(), generated.output).toEqual(EXPECTED_WARNINGS);
    // Those left the bundle upload in place: the generated client has it, as a File body.
    expect(generated.output).not.toContain('POST /bundles within deployments. Endpoint will not be generated');

    const environment = 'py';
    const bundleFile = join(dir, 'bundle.tgz');
    writeFileSync(bundleFile, await makeBundle({ 'assets/orders.js': 'export default async (ctx) => ctx.emit([{ id: 1, by: "python" }]);' }));
    const manifestFile = join(dir, 'manifest.json');
    writeFileSync(
      manifestFile,
      JSON.stringify({
        version: 1,
        assets: [{ key: 'orders', binding: 'warehouse', entry: 'assets/orders.js', deps: [] }],
        jobs: [{ name: 'all', assets: ['orders'] }],
        schedules: [],
      }),
    );
    const storagePrefix = `file://${join(stack.dataDir, 'lake', tenant.tenantId, environment)}`;
    const driven = await runPinnedPythonTool(tool, [DRIVER, `${stack.gatewayUrl}/api/v1`, tenant.token, environment, storagePrefix, bundleFile, manifestFile], {
      cwd: dir,
      env: { PYTHONPATH: `${dir}:${tool.pythonPath}`, PYTHONDONTWRITEBYTECODE: '1' },
    });
    expect(driven.code, driven.output).toBe(0);
    const result = JSON.parse(driven.output.trim().split('\n').at(-1)!) as { bundle_ref: string; run: { id: string; status: string; max_attempts: number } };
    expect(result.run).toMatchObject({ status: 'succeeded', max_attempts: 1 });

    // What the engine holds agrees: the run, read back through the harness's checked client.
    const read = await tenant.api.get(`/runs/${result.run.id}`);
    expect(read.body.data).toMatchObject({ status: 'succeeded', job: 'all' });
  }, 300_000);
});
