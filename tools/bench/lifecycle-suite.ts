// Environment lifecycle: what the delete fence costs run creation (every run writes its
// environment's admission count, so the runs of one environment are created one
// transaction at a time), measured as runs created in one environment against the same
// runs spread over thirty, in alternating rounds of the same run; and how long a delete
// takes with a thousand queued runs in the environment.
import { ApiClient, deployProject, manifestOf } from '@envengine/test-harness';
import { median, percentile, runConcurrently, type Bench } from './harness.ts';
import type { SuiteContext } from './suite-context.ts';

const SPREAD = 30;
const IN_FLIGHT = 30;
const RUNS_PER_ROUND = 300;
const ROUNDS = 3;

export async function lifecycleSuite(_bench: Bench, { stack, dataDir, token }: SuiteContext): Promise<string[]> {
  const api = new ApiClient(`${stack.services.gatewayUrl}/api/v1`, token);
  // Remote, with no pool worker: the runs stay queued, so only their creation is timed.
  const deploy = (environment: string) =>
    deployProject(api, {
      environment,
      storagePrefix: `file://${dataDir}/lake/${environment}`,
      executor: 'remote',
      bindings: { warehouse: {} },
      files: { 'assets/empty.js': 'export default async () => {};' },
      manifest: { ...manifestOf([{ key: 'empty' }]), schedules: [] },
    });
  await deploy('one');
  const spread = Array.from({ length: SPREAD }, (_, index) => `spread-${index}`);
  for (const environment of spread) await deploy(environment);

  const round = async (environmentOf: (index: number) => string) => {
    const latencies: number[] = [];
    const seconds = await runConcurrently(RUNS_PER_ROUND, IN_FLIGHT, async (index) => {
      const started = performance.now();
      const response = await api.post(`/environments/${environmentOf(index)}/runs`, { assets: ['empty'] });
      if (response.status !== 201) throw new Error(`creating a run answered ${response.status}: ${response.text.slice(0, 200)}`);
      latencies.push(performance.now() - started);
    });
    return { perSecond: RUNS_PER_ROUND / seconds, latencies };
  };
  const one: Array<Awaited<ReturnType<typeof round>>> = [];
  const many: Array<Awaited<ReturnType<typeof round>>> = [];
  // A round of each first, not counted: connections, JIT, and each environment's first run (which opens its admission stripes).
  await round(() => 'one');
  await round((run) => spread[run % SPREAD]!);
  for (let index = 0; index < ROUNDS; index += 1) {
    one.push(await round(() => 'one'));
    many.push(await round((run) => spread[run % SPREAD]!));
  }
  const rate = (rounds: typeof one) => median(rounds.map((entry) => entry.perSecond));
  const p = (rounds: typeof one, q: number) => percentile(rounds.flatMap((entry) => entry.latencies), q);
  const ratio = rate(one) / rate(many);

  // The delete of an environment holding RUNS_PER_ROUND × (ROUNDS + 1) queued runs, jobs in Redis.
  const started = performance.now();
  const deleted = await api.delete('/environments/one');
  const deleteSeconds = (performance.now() - started) / 1000;
  if (deleted.status !== 200) throw new Error(`deleting answered ${deleted.status}: ${deleted.text.slice(0, 200)}`);
  for (const environment of spread) await api.delete(`/environments/${environment}?force=true`);

  console.error(`  run creation: one environment ${rate(one).toFixed(1)}/s, thirty ${rate(many).toFixed(1)}/s (${ratio.toFixed(2)}x); delete with ${RUNS_PER_ROUND * (ROUNDS + 1)} queued runs ${deleteSeconds.toFixed(1)} s`);
  return [
    '## Environment lifecycle',
    '',
    `Run creation (\`POST …/runs\`, a remote environment with no worker: runs stay queued), ${IN_FLIGHT} in flight, ${RUNS_PER_ROUND} runs per round, ${ROUNDS} alternating rounds:`,
    '',
    '| runs created in | per second (median of rounds) | p50 ms | p99 ms |',
    '|---|---:|---:|---:|',
    `| one environment | ${rate(one).toFixed(1)} (${one.map((entry) => entry.perSecond.toFixed(1)).join(', ')}) | ${p(one, 50).toFixed(1)} | ${p(one, 99).toFixed(1)} |`,
    `| ${SPREAD} environments, round robin | ${rate(many).toFixed(1)} (${many.map((entry) => entry.perSecond.toFixed(1)).join(', ')}) | ${p(many, 50).toFixed(1)} | ${p(many, 99).toFixed(1)} |`,
    '',
    `One environment against ${SPREAD}: ${ratio.toFixed(2)}x (after one uncounted round of each). Every manual run's transaction writes one of its environment's admission stripes, at random, which a delete's mark writes all of: runs of one environment conflict only when two pick the same stripe, and the driver runs the loser again; the ratio is what that costs.`,
    '',
    `\`DELETE /environments/one\` with ${RUNS_PER_ROUND * (ROUNDS + 1)} queued runs (their jobs in Redis): ${deleteSeconds.toFixed(1)} s to the answer, the tear-down workflow included.`,
  ];
}
