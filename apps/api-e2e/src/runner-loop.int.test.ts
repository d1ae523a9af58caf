import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { Run } from '@envengine/contracts';
import { createTenant, deployProject, until, type TestTenant } from '@envengine/test-harness';
import { waitForRun } from './runs-fixtures.ts';

// The engine's runner masks every secret an attempt resolved in each of its log lines, on
// the loop that also sends every tenant's heartbeats (apps/attempt-worker/src/execution/
// log-shipper.ts). A tenant sizes that work: how many strings its secrets give, how many
// lines it writes. Here one tenant makes it as large as the mask takes while another's runs
// are timed beside it (issue 68: the runner froze for 70 s and the victim's attempt was lost).

const stack = inject('stack');

/** Distinct 4-character lines: each is a string to mask. Two secrets of 2,000 make 4,002 with the whole values, under the mask's 4,096. */
const manyLines = (tag: string, count: number) => Array.from({ length: count }, (_, index) => `${tag}${index.toString(36).padStart(3, '0')}`).join('\n');

/** Logs lines of 1,000 characters in rounds of 200, resolving its binding each round, until the binding says stop or 3 s pass (under the suite's 4 s asset limit). */
const MASKED_LOGGER = `export default async (ctx) => {
  const started = Date.now();
  const filler = 'x'.repeat(1000);
  for (let round = 0; Date.now() - started < 3000; round++) {
    const config = await ctx.connection('masked');
    if (config.stop) break;
    for (let line = 0; line < 200; line++) ctx.log(round + '.' + line + ' ' + filler);
  }
  await ctx.emit([{ report: 'logged' }]);
};`;

const files = {
  'assets/masked_logger.js': MASKED_LOGGER,
  'assets/quick.js': `export default async (ctx) => { await ctx.emit([{ report: 'quick' }]); };`,
};
const manifest = (binding: string) => ({
  version: 1,
  assets: ['masked_logger', 'quick'].map((key) => ({ key, binding: key === 'quick' ? 'lake' : binding, entry: `assets/${key}.js`, deps: [], schema: { columns: [{ name: 'report', type: 'string' }] } })),
  jobs: [],
  schedules: [],
});

async function deploy(tenant: TestTenant, bindings: Record<string, Record<string, unknown>>, secrets: Record<string, string> = {}): Promise<void> {
  await deployProject(tenant.api, {
    secrets,
    environment: 'prod',
    storagePrefix: `file://${join(stack.dataDir, 'lake', tenant.tenantId, 'prod')}`,
    executor: 'local',
    bindings: { lake: {}, ...bindings },
    files,
    manifest: manifest('masked'),
  });
}

async function startRun(tenant: TestTenant, asset: string): Promise<string> {
  const started = await tenant.api.post('/environments/prod/runs', { assets: [asset] });
  expect(started.status).toBe(201);
  return Run.parse(started.body.data).id;
}

const millis = (iso: string | null | undefined) => new Date(iso!).getTime();

/** A victim's run from its creation to its last attempt's finish, as the engine recorded them; it must succeed in one attempt. */
async function timedRun(victim: TestTenant): Promise<{ ms: number; finishedAt: number }> {
  const run = await waitForRun(victim, await startRun(victim, 'quick'), 60_000);
  expect(run.status).toBe('succeeded');
  expect(run.attempts).toHaveLength(1);
  const finishedAt = millis(run.attempts[0]!.finished_at);
  return { ms: finishedAt - millis(run.inserted_at), finishedAt };
}

describe("a tenant's secrets and logs never stall the engine's runner for another tenant", () => {
  it("runs another tenant's trivial runs within twice their quiet time while an attempt masks 4,002 secret strings in 1,000-character lines", async () => {
    const attacker = await createTenant(stack, 'loop-attacker');
    const victim = await createTenant(stack, 'loop-victim');
    await deploy(attacker, { masked: { config: { stop: false }, secret_refs: { first: 'lines-a', second: 'lines-b' } } }, { 'lines-a': manyLines('a', 2000), 'lines-b': manyLines('b', 2000) });
    await deploy(victim, {});

    const quiet: number[] = [];
    for (let index = 0; index < 5; index++) quiet.push((await timedRun(victim)).ms);
    const quietP99 = Math.max(...quiet);

    const attack = await startRun(attacker, 'masked_logger');
    // Evidence that the attack is under way: its attempt has written lines.
    await until(async () => (await attacker.api.get(`/runs/${attack}/logs`)).body.data as unknown[], (lines) => lines.length > 0, 30_000, 50);
    const loaded: { ms: number; finishedAt: number }[] = [];
    for (let index = 0; index < 3; index++) loaded.push(await timedRun(victim));
    const stop = await attacker.api.put('/environments/prod/bindings/masked', { config: { stop: true }, secret_refs: { first: 'lines-a', second: 'lines-b' } });
    expect(stop.status).toBeLessThan(300);
    const attackRun = await waitForRun(attacker, attack, 60_000);
    console.log(`runner loop: victim quiet ${quiet.join(', ')} ms; beside the masking attack ${loaded.map((run) => run.ms).join(', ')} ms; attack ${attackRun.status}`);

    // The victim's runs ran while the attack did.
    expect(millis(attackRun.attempts[0]!.finished_at)).toBeGreaterThan(Math.min(...loaded.map((run) => run.finishedAt)));
    for (const run of loaded) expect(run.ms).toBeLessThanOrEqual(2 * quietP99 + 1000);
    expect(attackRun.status).toBe('succeeded');
  }, 180_000);

  it('fails, with a clear error and before the asset has the values, a resolution whose secrets would be more strings than an attempt masks', async () => {
    const tenant = await createTenant(stack, 'loop-over-mask');
    // 5,000 lines in one secret: over the 4,096 strings an attempt masks.
    await deploy(tenant, { masked: { config: { stop: false }, secret_refs: { only: 'too-many' } } }, { 'too-many': manyLines('c', 5000) });
    const run = await waitForRun(tenant, await startRun(tenant, 'masked_logger'), 60_000);
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/an attempt masks at most 4096 strings/);
    const logs = (await tenant.api.get(`/runs/${run.id}/logs`)).body.data as { message: string }[];
    // The asset never logged a line: its first resolution failed.
    expect(logs.some((line) => line.message.startsWith('0.0 '))).toBe(false);
  }, 120_000);
});
