import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * A TypeScript client generated from docs/openapi.json works unchanged (issue 61): types made
 * by `openapi-typescript` with its default flags, and a script that lists environments,
 * creates one (without the fields that have defaults) and starts a run through
 * `openapi-fetch`, must type-check with `tsc --noEmit`. Type-checking only: no stack.
 */
const WORKSPACE = resolve(import.meta.dirname, '..', '..', '..');
const DOCUMENT = join(WORKSPACE, 'docs', 'openapi.json');
const require = createRequire(import.meta.url);
// Its CLI, by path: the package's exports do not name it.
const OPENAPI_TYPESCRIPT = join(WORKSPACE, 'node_modules', 'openapi-typescript', 'bin', 'cli.js');
const TSC = require.resolve('typescript/bin/tsc');

const SCRIPT = `import createClient from 'openapi-fetch';
import type { components, paths } from './schema.ts';

const client = createClient<paths>({ baseUrl: 'http://localhost:8080/api/v1', headers: { authorization: 'Bearer tok' } });

const listed = await client.GET('/environments');
const names: string[] = (listed.data?.data ?? []).map((environment) => environment.name);

// Only the fields without a default: kind, strict, egress and purge_data_on_expiry are left out.
const created = await client.POST('/environments', {
  body: { name: 'dev', storage_prefix: 'file:///tmp/envengine-dev', executor: 'local' },
});
if (created.error) {
  const refused: components['schemas']['Error'] = created.error;
  throw new Error(refused.error.code);
}
const environment: string = created.data.data.name;

// A run of a job, without max_attempts; and one of assets.
const run = await client.POST('/environments/{name}/runs', { params: { path: { name: environment } }, body: { job: 'daily' } });
const runId: string | undefined = run.data?.data.id;
await client.POST('/environments/{name}/runs', { params: { path: { name: environment } }, body: { assets: ['cities'] } });

const read = await client.GET('/runs/{id}', { params: { path: { id: runId ?? '' } } });
const status: string | undefined = read.data?.data.status;
console.log(names, status);
`;

function run(args: string[], cwd: string): Promise<{ exitCode: number; output: string }> {
  return new Promise((done) => {
    execFile(process.execPath, args, { cwd, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      done({ exitCode: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'envengine-openapi-typescript-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a TypeScript client generated with openapi-typescript (default flags)', () => {
  it('type-checks a script that lists environments, creates one and starts a run', async () => {
    const generated = await run([OPENAPI_TYPESCRIPT, DOCUMENT, '--output', join(dir, 'schema.ts')], dir);
    expect(generated.exitCode, generated.output).toBe(0);

    // openapi-fetch (and @types/node's absence) resolved from the workspace, as an installed package would be.
    symlinkSync(join(WORKSPACE, 'node_modules'), join(dir, 'node_modules'), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    writeFileSync(join(dir, 'client.ts'), SCRIPT);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2023',
          lib: ['ES2023', 'DOM'],
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noUncheckedIndexedAccess: true,
          allowImportingTsExtensions: true,
          noEmit: true,
          types: [],
        },
        files: ['client.ts', 'schema.ts'],
      }),
    );
    const checked = await run([TSC, '--noEmit', '--pretty', 'false', '-p', join(dir, 'tsconfig.json')], dir);
    expect(checked.output).toBe('');
    expect(checked.exitCode).toBe(0);
  }, 120_000);
});
