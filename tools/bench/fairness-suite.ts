// Fair shares of the engine's runner (issue 35): how long tenant B's run waits for a runner
// slot, alone and while tenant A holds a backlog of 500 queued runs, and what the fair
// admission costs the runner's throughput, against LOCAL_FAIR_SHARE=off in alternating
// rounds of the same stack (the placement-service restarted between them).
import { Run } from '@envengine/contracts';
import { issueToken, withTokenStore } from '@envengine/dev-stack';
import { ApiClient, deployProject, manifestOf } from '@envengine/test-harness';
import { median, percentile, runConcurrently, type Bench } from './harness.ts';
import type { SuiteContext } from './suite-context.ts';

const BACKLOG = 500;
const PROBES = 40;
const DRAIN_RUNS = 200;
const ROUNDS = 2;

const TERMINAL = new Set(['succeeded', 'failed', 'canceled']);

export async function fairnessSuite(_bench: Bench, { stack, dataDir, token }: SuiteContext): Promise<string[]> {
  const gateway = `${stack.services.gatewayUrl}/api/v1`;
  const noisy = new ApiClient(gateway, token);
  const quietToken = await withTokenStore(stack.servers.mongo.adminUrl, stack.services.databases.gateway, (tokens) => issueToken(tokens, 'bench-quiet', 'bench'));
  const quiet = new ApiClient(gateway, quietToken.token.token);
  for (const [api, name] of [[noisy, 'noisy'], [quiet, 'quiet']] as const) {
    await deployProject(api, {
      environment: 'prod',
      storagePrefix: `file://${dataDir}/lake/${name}`,
      executor: 'local',
      bindings: { warehouse: {} },
      files: { 'assets/empty.js': 'export default async () => {};' },
      manifest: { ...manifestOf([{ key: 'empty' }]), schedules: [] },
    });
  }
  const start = async (api: ApiClient) => {
    const response = await api.post('/environments/prod/runs', { assets: ['empty'] });
    if (response.status !== 201) throw new Error(`creating a run answered ${response.status}: ${response.text.slice(0, 200)}`);
    return Run.parse(response.body.data).id;
  };
  const finished = async (api: ApiClient, id: string) => {
    for (;;) {
      const run = Run.parse((await api.get(`/runs/${id}`)).body.data);
      if (TERMINAL.has(run.status)) return run;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  /** B's runs one after another: from each run's creation to its attempt's start, as the engine recorded them. */
  const probe = async () => {
    const waits: number[] = [];
    for (let index = 0; index < PROBES; index++) {
      const run = await finished(quiet, await start(quiet));
      waits.push(new Date(run.attempts[0]!.started_at!).getTime() - new Date(run.inserted_at).getTime());
    }
    return waits;
  };
  const drained = async (api: ApiClient) => {
    for (;;) {
      const [queued, running] = await Promise.all([api.get('/environments/prod/runs?status=queued&limit=1'), api.get('/environments/prod/runs?status=running&limit=1')]);
      if ((queued.body.data as unknown[]).length === 0 && (running.body.data as unknown[]).length === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  await probe(); // warm: bundles cached, children forked, connections open
  const quietWaits = await probe();
  for (let index = 0; index < BACKLOG; index++) await start(noisy);
  const loadedWaits = await probe();
  await drained(noisy);
  // The same without the default cap (one of the runner's slots kept from any one tenant): A may hold them all.
  await stack.services.restart('placement-service', { LOCAL_MAX_PER_TENANT: 'all' });
  for (let index = 0; index < BACKLOG; index++) await start(noisy);
  const uncappedWaits = await probe();
  await drained(noisy);

  // Throughput: DRAIN_RUNS runs of two tenants, created 20 at a time, until all are done.
  const throughput = async () => {
    const begun = performance.now();
    await runConcurrently(DRAIN_RUNS, 20, async (index) => void (await start(index % 2 === 0 ? noisy : quiet)));
    await Promise.all([drained(noisy), drained(quiet)]);
    return DRAIN_RUNS / ((performance.now() - begun) / 1000);
  };
  const on: number[] = [];
  const off: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    await stack.services.restart('placement-service', { LOCAL_FAIR_SHARE: 'off' });
    off.push(await throughput());
    await stack.services.restart('placement-service');
    on.push(await throughput());
  }
  const p = (waits: number[], q: number) => percentile(waits, q);
  const ratio = median(on) / median(off);
  const p99Ratio = p(loadedWaits, 99) / p(quietWaits, 99);
  console.error(`  fairness: B's wait p50/p99 quiet ${p(quietWaits, 50)}/${p(quietWaits, 99)} ms, beside A's backlog ${p(loadedWaits, 50)}/${p(loadedWaits, 99)} ms, A uncapped ${p(uncappedWaits, 50)}/${p(uncappedWaits, 99)} ms; runs/s on ${on.map((v) => v.toFixed(1)).join(', ')} off ${off.map((v) => v.toFixed(1)).join(', ')}`);
  return [
    '## Fair shares of the engine runner',
    '',
    `Tenant B's runs of an empty asset, ${PROBES} one after another, from each run's creation to its attempt's start (the engine's own timestamps), with the runner idle and then while tenant A has ${BACKLOG} runs of the same asset queued:`,
    '',
    '| tenant B | p50 ms | p99 ms |',
    '|---|---:|---:|',
    `| alone | ${p(quietWaits, 50).toFixed(0)} | ${p(quietWaits, 99).toFixed(0)} |`,
    `| beside A's backlog of ${BACKLOG} (the default: A holds at most the runner's 4 slots less one) | ${p(loadedWaits, 50).toFixed(0)} | ${p(loadedWaits, 99).toFixed(0)} |`,
    `| beside A's backlog of ${BACKLOG}, \`LOCAL_MAX_PER_TENANT=all\` (A may hold every slot) | ${p(uncappedWaits, 50).toFixed(0)} | ${p(uncappedWaits, 99).toFixed(0)} |`,
    '',
    `p99 beside the backlog against alone: ${p99Ratio.toFixed(2)}x (target ≤ 2x: ${p99Ratio <= 2 ? 'met' : 'missed'}); with \`LOCAL_MAX_PER_TENANT=all\`: ${(p(uncappedWaits, 99) / p(quietWaits, 99)).toFixed(2)}x. Uncapped, B waits for one of A's slots to free (at most one slot's time); by default B starts at once, and what is left is the runner's CPU, which A's three runs share with B's on this 2-core machine.`,
    '',
    `Throughput: ${DRAIN_RUNS} runs of two tenants created 20 at a time until all are done, ${ROUNDS} alternating rounds: ${median(on).toFixed(1)} runs/s with fair shares (${on.map((v) => v.toFixed(1)).join(', ')}) against ${median(off).toFixed(1)} with \`LOCAL_FAIR_SHARE=off\` (${off.map((v) => v.toFixed(1)).join(', ')}): ${ratio.toFixed(2)}x (target ≥ 0.95x: ${ratio >= 0.95 ? 'met' : 'missed'}).`,
  ];
}
