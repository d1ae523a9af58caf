import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Run, dataEnvelope } from '@envengine/contracts';
import { WORKSPACE_ROOT } from '@envengine/dev-stack';
import { createTenant, type TestTenant } from '@envengine/test-harness';
import { z } from 'zod';
import { waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');
const SCRIPT = join(WORKSPACE_ROOT, 'examples', 'ci', 'preview.sh');
const EXAMPLE = join(WORKSPACE_ROOT, 'examples', 'orders');
const CLI = join(WORKSPACE_ROOT, 'dist', 'apps', 'cli', 'main.js');

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('the CI recipe (examples/ci/preview.sh): a preview per pull request, with envctl only', () => {
  let tenant: TestTenant;
  let env: Record<string, string>;

  /** Runs a command to its end with the test's environment, and collects its output. */
  const collected = (command: string, args: string[]): Promise<Result> =>
    new Promise((resolve, reject) => {
      const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  /** The recipe as the workflow runs it, with envctl (the built CLI) on PATH. */
  const recipe = (...args: string[]) => collected('bash', [SCRIPT, ...args]);
  const runEnvctl = (args: string[]) => collected(process.execPath, [CLI, ...args]);

  beforeAll(async () => {
    tenant = await createTenant(stack, 'ci-recipe');
    const bin = mkdtempSync(join(tmpdir(), 'envctl-bin-'));
    writeFileSync(join(bin, 'envctl'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`);
    chmodSync(join(bin, 'envctl'), 0o755);
    const home = mkdtempSync(join(tmpdir(), 'envctl-home-'));
    env = { PATH: `${bin}:${process.env.PATH ?? ''}`, HOME: home, XDG_CONFIG_HOME: join(home, '.config'), ENVCTL_URL: stack.gatewayUrl, ENVCTL_TOKEN: tenant.token, NO_COLOR: '1' };

    // The parent: the example deployed to staging, with its secret and binding, and run once.
    const lake = join(stack.dataDir, 'lake', tenant.tenantId);
    expect((await tenant.api.post('/environments', { name: 'staging', storage_prefix: `file://${lake}/staging`, executor: 'local' })).status).toBe(201);
    expect((await tenant.api.put('/environments/staging/secrets/orders-api-key', { value: 'ci-recipe-key' })).status).toBe(201);
    expect((await tenant.api.put('/environments/staging/bindings/warehouse', { config: { reporting_currency: 'EUR', rates: { USD_EUR: 0.92 } }, secret_refs: { api_key: 'orders-api-key' } })).status).toBe(201);
    const deployed = await runEnvctl(['deploy', EXAMPLE, '--env', 'staging']);
    expect(deployed.code, deployed.stderr).toBe(0);
    const started = await tenant.api.post('/environments/staging/runs', { job: 'refresh' });
    expect((await waitForRun(tenant, started.body.data.id as string)).status).toBe('succeeded');
  });

  it('opens pr-7 from staging, deploys the change, prints the diff, runs only what changed (reading the rest from staging), and closes it', async () => {
    // The pull request changes daily_revenue's code, nothing else.
    const checkout = mkdtempSync(join(tmpdir(), 'ci-recipe-pr-'));
    cpSync(EXAMPLE, checkout, { recursive: true });
    const entry = join(checkout, 'assets', 'daily_revenue.js');
    writeFileSync(entry, `${readFileSync(entry, 'utf8')}\n// pr 7: a comment is a change of the file\n`);

    const opened = await recipe('open', '7', checkout);
    expect(opened.code, `${opened.stdout}\n${opened.stderr}`).toBe(0);
    expect(opened.stdout).toContain('Made pr-7, a preview of staging.');
    expect(opened.stdout).toContain('~ file assets/daily_revenue.js');
    expect(opened.stdout).toContain('Running the changed assets: daily_revenue');

    const preview = (await tenant.api.get('/environments/pr-7')).body.data as { parent: string; kind: string; idle_ttl_hours: number };
    expect(preview).toMatchObject({ parent: 'staging', kind: 'preview', idle_ttl_hours: 48 });
    // One run, of daily_revenue alone, which read staging's orders.
    const runs = dataEnvelope(z.array(Run)).parse((await tenant.api.get('/environments/pr-7/runs')).body).data;
    expect(runs.map((run) => [run.assets, run.status])).toEqual([[['daily_revenue'], 'succeeded']]);
    expect(runs[0]!.attempts[0]!.reads).toEqual([expect.objectContaining({ asset: 'daily_revenue', upstream: 'orders', environment: 'staging' })]);
    // The deploy and the run went with a token limited to pr-*, made by the recipe.
    const tokens = (await tenant.api.get('/tokens')).body.data as Array<{ name: string; environments: string[] | null }>;
    expect(tokens.find((token) => token.name === 'ci pr-7')?.environments).toEqual(['pr-*']);

    const closed = await recipe('close', '7');
    expect(closed.code, closed.stderr).toBe(0);
    expect((await tenant.api.get('/environments/pr-7')).status).toBe(404);
    expect((await tenant.api.get('/environments/staging')).status).toBe(200);
  });
});
