import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { Run } from '@envengine/contracts';
import { createTenant, deployProject, until, type TestTenant } from '@envengine/test-harness';
import { waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');

/** How long each of the backlog's assets holds a runner slot: under the suite's 4 s asset limit. */
const SLEEP_MS = 1200;
const BACKLOG = 50;

const files = {
  'assets/sleeper.js': `export default async (ctx) => { await new Promise((resolve) => setTimeout(resolve, ${SLEEP_MS})); await ctx.emit([{ report: 'slept' }]); };`,
  'assets/quick.js': `export default async (ctx) => { await ctx.emit([{ report: 'quick' }]); };`,
};
const manifest = {
  version: 1,
  assets: ['sleeper', 'quick'].map((key) => ({ key, binding: 'lake', entry: `assets/${key}.js`, deps: [], schema: { columns: [{ name: 'report', type: 'string' }] } })),
  jobs: [],
  schedules: [],
};

async function deploy(tenant: TestTenant): Promise<void> {
  await deployProject(tenant.api, {
    environment: 'prod',
    storagePrefix: `file://${join(stack.dataDir, 'lake', tenant.tenantId, 'prod')}`,
    executor: 'local',
    bindings: { lake: {} },
    files,
    manifest,
  });
}

async function startRun(tenant: TestTenant, asset: string): Promise<string> {
  const started = await tenant.api.post('/environments/prod/runs', { assets: [asset] });
  expect(started.status).toBe(201);
  return Run.parse(started.body.data).id;
}

const millis = (iso: string | null | undefined) => new Date(iso!).getTime();

describe("the engine runner's slots are shared fairly across tenants", () => {
  it("starts each of tenant B's runs within one slot's time while tenant A holds a backlog of 50, and A's runs all succeed", async () => {
    const noisy = await createTenant(stack, 'fair-noisy');
    const quiet = await createTenant(stack, 'fair-quiet');
    await Promise.all([deploy(noisy), deploy(quiet)]);

    const backlog: string[] = [];
    for (let index = 0; index < BACKLOG; index++) backlog.push(await startRun(noisy, 'sleeper'));
    // Evidence that A holds the runner: some of its runs are running, and most wait.
    await until(
      async () => (await noisy.api.get('/environments/prod/runs?status=running')).body.data as unknown[],
      (running) => running.length >= 2,
      30_000,
      100,
    );

    const delays: number[] = [];
    for (let index = 0; index < 5; index++) {
      const finished = await waitForRun(quiet, await startRun(quiet, 'quick'), 60_000);
      expect(finished.status).toBe('succeeded');
      // From the run's creation to its attempt's start, both as the engine recorded them.
      delays.push(millis(finished.attempts[0]!.started_at) - millis(finished.inserted_at));
    }

    const done = await Promise.all(backlog.map((id) => waitForRun(noisy, id, 180_000)));
    expect(done.map((run) => run.status)).toEqual(backlog.map(() => 'succeeded'));
    // A slot's time: how long each of A's attempts held its slot, from start to finish.
    const slotMs = done.map((run) => millis(run.attempts[0]!.finished_at) - millis(run.attempts[0]!.started_at)).sort((a, b) => a - b);
    const medianSlotMs = slotMs[Math.floor(slotMs.length / 2)]!;
    // And how long A's last run waited behind its own backlog: what B would wait first come, first served.
    const backlogWaitMs = Math.max(...done.map((run) => millis(run.attempts[0]!.started_at) - millis(run.inserted_at)));
    console.log(`fair shares: B's starts after ${delays.join(', ')} ms; A's slot ${medianSlotMs} ms (median), A's longest wait ${backlogWaitMs} ms`);
    // Each of B's runs waits for one of A's slots to free at most (with room for a busy machine), never for A's backlog.
    for (const delay of delays) expect(delay).toBeLessThan(medianSlotMs * 2);
    expect(backlogWaitMs).toBeGreaterThan(medianSlotMs * 4);
  }, 300_000);
});
