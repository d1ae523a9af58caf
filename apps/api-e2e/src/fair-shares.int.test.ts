import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { Run } from '@envengine/contracts';
import { createTenant, deployProject, until, type TestTenant } from '@envengine/test-harness';
import { waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');

/** How long each of the backlog's assets holds a runner slot: under the suite's 4 s asset limit. */
const SLEEP_MS = 1200;
const BACKLOG = 50;
/** The stack's runner: one attempt-worker --local at its default CONCURRENCY. */
const RUNNER_SLOTS = 4;
/**
 * The attacker's assets in the test of the default cap sleep until the next multiple of
 * this on the clock (under the suite's 4 s asset limit), so that the runs holding the
 * runner end together and the next ones start together: a victim that finds every slot
 * held then waits most of a period, as the 16 runs of 45 s made it wait 42.2 s.
 */
const PERIOD_MS = 3000;

const files = {
  'assets/sleeper.js': `export default async (ctx) => { await new Promise((resolve) => setTimeout(resolve, ${SLEEP_MS})); await ctx.emit([{ report: 'slept' }]); };`,
  // No emit: nothing but the sleep holds the slot, well inside the asset limit on a busy machine.
  'assets/long_sleeper.js': `export default async () => { await new Promise((resolve) => setTimeout(resolve, ${PERIOD_MS} - (Date.now() % ${PERIOD_MS}))); };`,
  'assets/quick.js': `export default async (ctx) => { await ctx.emit([{ report: 'quick' }]); };`,
};
const manifest = {
  version: 1,
  assets: ['sleeper', 'long_sleeper', 'quick'].map((key) => ({ key, binding: 'lake', entry: `assets/${key}.js`, deps: [], schema: { columns: [{ name: 'report', type: 'string' }] } })),
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

/** From a run's creation to its first attempt's start, both as the engine recorded them. */
const startDelay = (run: Run) => millis(run.attempts[0]!.started_at) - millis(run.inserted_at);

/** The most of these runs' first attempts that were running at one instant, from their recorded starts and ends. */
function mostAtOnce(runs: readonly Run[]): number {
  const edges = runs.flatMap((run) => [
    { at: millis(run.attempts[0]!.started_at), step: 1 },
    { at: millis(run.attempts[0]!.finished_at), step: -1 },
  ]);
  // An end and a start at the same millisecond: the end first (the slot was handed on).
  edges.sort((a, b) => a.at - b.at || a.step - b.step);
  let now = 0;
  let most = 0;
  for (const edge of edges) most = Math.max(most, (now += edge.step));
  return most;
}

/** Runs `count` of the tenant's quick runs one after another; their start delays. */
async function probe(tenant: TestTenant, count: number): Promise<number[]> {
  const delays: number[] = [];
  for (let index = 0; index < count; index++) {
    const finished = await waitForRun(tenant, await startRun(tenant, 'quick'), 60_000);
    expect(finished.status).toBe('succeeded');
    delays.push(startDelay(finished));
  }
  return delays;
}

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

  it("by default no tenant holds every slot: the victim's trivial runs start at once beside a runner full of the attacker's sleeping runs, and the attacker alone takes all but one", async () => {
    const attacker = await createTenant(stack, 'slots-attacker');
    const victim = await createTenant(stack, 'slots-victim');
    await Promise.all([deploy(attacker), deploy(victim)]);
    await probe(victim, 1); // warm: the victim's bundle cached, its child forked
    const quiet = await probe(victim, 3);
    const quietMax = Math.max(...quiet);

    // Waves of runs that hold every slot the attacker may have, each wave to the end of a period.
    const attack: string[] = [];
    for (let index = 0; index < RUNNER_SLOTS * 10; index++) attack.push(await startRun(attacker, 'long_sleeper'));
    const underAttack: number[] = [];
    for (let index = 0; index < 4; index++) {
      // Evidence that a wave has just begun: as many of the attacker's runs as it may hold
      // started in this period, with most of the period left.
      let waveBegun = false;
      await until(
        async () => Run.array().parse((await attacker.api.get('/environments/prod/runs?status=running')).body.data),
        (running) => {
          const periodBegan = Date.now() - (Date.now() % PERIOD_MS);
          const fresh = running.filter((run) => millis(run.attempts.at(-1)!.started_at) >= periodBegan).length;
          return (waveBegun = fresh >= RUNNER_SLOTS - 1 && Date.now() - periodBegan < PERIOD_MS / 3);
        },
        15_000,
        20,
      );
      expect(waveBegun, `a wave of the attacker's runs began before probe ${index + 1}`).toBe(true);
      underAttack.push(...(await probe(victim, 1)));
    }

    const done = await Promise.all(attack.map((id) => waitForRun(attacker, id, 120_000)));
    const attackerAtOnce = mostAtOnce(done.filter((run) => run.attempts[0]?.started_at && run.attempts[0]?.finished_at));
    console.log(
      `runner slots: victim's starts quiet ${quiet.join(', ')} ms, beside the attack ${underAttack.join(', ')} ms (bound ${2 * quietMax + 1000} ms); ` +
        `the attacker's runs at once at most ${attackerAtOnce} of ${RUNNER_SLOTS}, ${done.filter((run) => run.status === 'succeeded').length} of ${done.length} succeeded`,
    );
    // Each of the victim's runs starts within its quiet time and a small bound, never after one of the attacker's sleeps.
    for (const delay of underAttack) expect(delay).toBeLessThan(2 * quietMax + 1000);
    // The attacker used the runner beyond its half while the victim had nothing waiting, but never every slot.
    expect(attackerAtOnce).toBe(RUNNER_SLOTS - 1);
    expect(done.map((run) => run.status)).toEqual(attack.map(() => 'succeeded'));
  }, 300_000);
});
