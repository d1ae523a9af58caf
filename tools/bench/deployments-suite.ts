// Ingest and activation through the gateway against a raw `client.workflow.execute` of a
// workflow with one no-op activity, on the same Temporal server: at 1 in flight, at 10 in
// flight over 10 environments, and at 10 in flight on one environment (serialized activations).
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { validateManifest } from '@envengine/manifest-rules';
import { makeBundle, manifestOf } from '@envengine/test-harness';
import { cpuSecondsOf, median, rssMegabytes, stackProcessGroups, type Bench } from './harness.ts';
import { describeCalls, historyOf, retriesOf } from './history-split.ts';
import type { SuiteContext } from './suite-context.ts';

interface LatencyRun {
  name: string;
  inFlight: number;
  count: number;
  p50: number;
  p99: number;
  perSecond: number;
  failures: number;
  /** CPU milliseconds per call, by process, over the run. */
  cpuMsPerCall: Record<string, number>;
}

/** The processes whose CPU a run accounts for, by name (several pids: a deployable's replicas, a cluster's parts). */
let accounted: Record<string, Array<number | undefined>> = {};
const cpuSecondsOfAll = (pids: Array<number | undefined>) => pids.reduce<number>((sum, pid) => sum + cpuSecondsOf(pid), 0);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** Runs `operation` `count` times with `inFlight` at once; latency per call and calls per second. */
async function measureCalls(name: string, inFlight: number, count: number, operation: (i: number) => Promise<boolean>): Promise<LatencyRun> {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const cpuBefore = Object.fromEntries(Object.entries(accounted).map(([process_, pids]) => [process_, cpuSecondsOfAll(pids)]));
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) {
        const i = next++;
        const callStarted = performance.now();
        if (!(await operation(i))) failures += 1;
        latencies.push(performance.now() - callStarted);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const cpuMsPerCall = Object.fromEntries(
    Object.entries(accounted).map(([process_, pids]) => [process_, ((cpuSecondsOfAll(pids) - cpuBefore[process_]!) * 1000) / count]),
  );
  const run = { name, inFlight, count, p50: percentile(latencies, 50), p99: percentile(latencies, 99), perSecond: count / seconds, failures, cpuMsPerCall };
  console.error(`  ${name}, ${inFlight} in flight: p50 ${run.p50.toFixed(1)} ms, p99 ${run.p99.toFixed(1)} ms, ${run.perSecond.toFixed(1)}/s, ${failures} failed`);
  return run;
}

const ENVIRONMENTS = 10;

export async function deploymentsSuite(bench: Bench, { stack, auth }: SuiteContext): Promise<string[]> {
  const { services, servers } = stack;
  const api = `${services.gatewayUrl}/api/v1`;
  const json = { ...auth, 'content-type': 'application/json' };
  const post = (path: string, body: unknown) => fetch(`${api}${path}`, { method: 'POST', headers: json, body: JSON.stringify(body) });
  const environments = Array.from({ length: ENVIRONMENTS }, (_, i) => `deploy-bench-${i}`);
  for (const name of environments) {
    await post('/environments', { name, storage_prefix: `s3://lake/${name}`, executor: 'local' });
    await fetch(`${api}/environments/${name}/bindings/warehouse`, { method: 'PUT', headers: json, body: '{}' });
  }
  const keys = ['raw_orders', 'orders', 'customers', 'revenue', 'report'];
  const bundle = await makeBundle(Object.fromEntries(keys.map((key) => [`assets/${key}.js`, 'export default async () => {}'])));
  const uploaded = await fetch(`${api}/bundles`, { method: 'POST', headers: { ...auth, 'content-type': 'application/gzip' }, body: bundle });
  const bundleRef = ((await uploaded.json()) as { data: { bundle_ref: string } }).data.bundle_ref;
  const manifest = manifestOf(
    keys.map((key, i) => ({ key, deps: i === 0 ? [] : [keys[i - 1]!], columns: [{ name: 'id', type: 'integer' }, { name: 'value', type: 'number', nullable: true }] })),
  );
  /** Each ingest's workflow and HTTP latency while `tracing` is set: where the slowest ones spent their time. */
  let traced: Array<{ workflowId: string; latencyMs: number }> | undefined;
  const ingestInto = async (environment: string) => {
    const started = performance.now();
    const response = await post(`/environments/${environment}/deployments`, { manifest, bundle_ref: bundleRef });
    const body = (await response.json()) as { data?: { id?: string } };
    if (traced && body.data?.id) traced.push({ workflowId: `ingest-${body.data.id}`, latencyMs: performance.now() - started });
    return response.status === 201;
  };
  const split: string[] = [];
  /** The slowest five calls and the median one of what was traced, each with the largest gaps of its history. */
  const describeTraced = async (title: string) => {
    const calls = [...(traced ?? [])].sort((a, b) => b.latencyMs - a.latencyMs);
    traced = undefined;
    const chosen = [...calls.slice(0, 5), calls[Math.floor(calls.length / 2)]!];
    split.push('', title, '', '| workflow | HTTP ms | workflow span ms | outside it ms | largest gaps in its history |', '|---|---:|---:|---:|---|', ...(await describeCalls(client, chosen)));
  };

  // The raw baseline: a worker in this process for the no-op workflow, on a queue of its own.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const taskQueue = `bench-noop-${randomBytes(4).toString('hex')}`;
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./noop.workflow.ts', import.meta.url)), logger: undefined });
  const workerConnection = await NativeConnection.connect({ address: servers.temporal.url });
  const worker = await Worker.create({ connection: workerConnection, taskQueue, workflowBundle, activities: { noop: async () => undefined } });
  const running = worker.run();
  const connection = await Connection.connect({ address: servers.temporal.url });
  const client = new Client({ connection });
  const rawExecute = async (i: number) => {
    await client.workflow.execute('noopWorkflow', { workflowId: `noop-${randomBytes(6).toString('hex')}-${i}`, taskQueue });
    return true;
  };

  const workerPid = services.processes['workflow-worker'].pid;
  accounted = { 'bench (load + raw worker)': [process.pid], ...stackProcessGroups(stack, ['attempt-worker', 'redis']) };
  const idleRss = rssMegabytes(workerPid);
  const runs: LatencyRun[] = [];
  try {
    // Warm-up, and two ready deployments per environment to roll between.
    for (let i = 0; i < 5; i += 1) await rawExecute(i);
    const pairs: Array<[string, string]> = [];
    for (const environment of environments) {
      await ingestInto(environment);
      await ingestInto(environment);
      const list = (await (await fetch(`${api}/environments/${environment}/deployments?limit=2`, { headers: auth })).json()) as { data: Array<{ id: string }> };
      pairs.push([list.data[0]!.id, list.data[1]!.id]);
    }
    const activate = (spread: number) => async (i: number) => {
      const [newer, older] = pairs[i % spread]!;
      // Alternating within an environment: every call really moves its pointer.
      return (await post(`/deployments/${Math.floor(i / spread) % 2 === 0 ? older : newer}/activate`, {})).status === 200;
    };
    const ingest = (spread: number) => (i: number) => ingestInto(environments[i % spread]!);
    runs.push(await measureCalls('raw client.workflow.execute, one no-op activity', 1, 40, rawExecute));
    traced = [];
    runs.push(await measureCalls('ingest through the gateway (5 assets, activate)', 1, 40, ingest(1)));
    await describeTraced('Ingests at 1 in flight, the five slowest and the median:');
    runs.push(await measureCalls('activation through the gateway', 1, 40, activate(1)));
    runs.push(await measureCalls('raw client.workflow.execute, one no-op activity', 10, 150, rawExecute));
    traced = [];
    runs.push(await measureCalls(`ingest through the gateway, over ${ENVIRONMENTS} environments`, 10, 150, ingest(ENVIRONMENTS)));
    await describeTraced(`Ingests at 10 in flight over ${ENVIRONMENTS} environments, the five slowest and the median:`);
    runs.push(await measureCalls(`activation through the gateway, over ${ENVIRONMENTS} environments`, 10, 150, activate(ENVIRONMENTS)));
    runs.push(await measureCalls('raw client.workflow.execute, one no-op activity', 50, 300, rawExecute));
    runs.push(await measureCalls(`ingest through the gateway, over ${ENVIRONMENTS} environments`, 50, 300, ingest(ENVIRONMENTS)));
    traced = [];
    runs.push(await measureCalls('ingest through the gateway, all on one environment', 10, 100, ingest(1)));
    await describeTraced('Ingests at 10 in flight, all on one environment (their activations wait in one line), the five slowest and the median:');
    // Twenty different deployments of one environment, so no two concurrent calls activate the same one
    // (those would share one workflow: `activate-<deployment id>`).
    const recent = (await (await fetch(`${api}/environments/${environments[0]}/deployments?limit=20`, { headers: auth })).json()) as { data: Array<{ id: string }> };
    const activateOneEnvironment = async (i: number) => (await post(`/deployments/${recent.data[i % recent.data.length]!.id}/activate`, {})).status === 200;
    runs.push(await measureCalls('activation through the gateway, all on one environment', 10, 100, activateOneEnvironment));
    // Activity retries in the environments' activation workflows, over every run above.
    const envIds = (await (await fetch(`${api}/environments`, { headers: auth })).json()) as { data: Array<{ id: string; name: string }> };
    const retries = (await Promise.all(envIds.data.map(async (environment) => retriesOf(await historyOf(client, `activations-${environment.id}`).catch(() => []))))).flat();
    split.push('', `Activity retries in the activation workflows (their latest runs): ${retries.length === 0 ? 'none' : retries.join('; ')}.`);
  } finally {
    worker.shutdown();
    await running;
    await workerConnection.close();
    await connection.close();
  }
  const loadedRss = rssMegabytes(workerPid);

  // Validation of a 2,000-asset manifest: the pure rules alone, as the workflow runs them.
  const big = manifestOf(Array.from({ length: 2000 }, (_, i) => ({ key: `asset_${i}`, deps: i === 0 ? [] : [`asset_${i - 1}`], columns: [{ name: 'id', type: 'integer' }] })));
  const context = {
    bindings: new Map([['warehouse', { mode: 'live' as const }]]),
    bundleEntries: new Set(Array.from({ length: 2000 }, (_, i) => `assets/asset_${i}.js`)),
    activeManifest: null,
    strict: false,
    allowContractChanges: [],
  };
  const validationMs: number[] = [];
  for (let i = 0; i < 7; i += 1) {
    const started = performance.now();
    const result = validateManifest(big, context);
    validationMs.push(performance.now() - started);
    if (result.errors.length > 0) throw new Error(`the 2,000-asset manifest failed: ${result.errors[0]!.code}`);
  }

  const raw = (inFlight: number) => runs.find((run) => run.inFlight === inFlight && run.name.startsWith('raw'))!;
  const row = (run: LatencyRun) =>
    `| ${run.name} | ${run.inFlight} | ${run.count} | ${run.p50.toFixed(1)} | ${run.p99.toFixed(1)} | ${run.perSecond.toFixed(1)} | ${(run.p50 / raw(run.inFlight).p50).toFixed(2)}x | ${run.failures} |`;
  return [
    '### Deployments',
    '',
    '| operation | in flight | calls | p50 ms | p99 ms | per second | p50 vs raw | failed |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...runs.map(row),
    '',
    'CPU milliseconds per call by process (2 cores: at 10 in flight the runs are CPU-bound, so calls per second ≈ 2000 / total):',
    '',
    `| operation | in flight | ${Object.keys(accounted).join(' | ')} | total |`,
    `|---|---:|${Object.keys(accounted).map(() => '---:').join('|')}|---:|`,
    ...runs.map((run) => {
      const cells = Object.keys(accounted).map((process_) => run.cpuMsPerCall[process_] ?? 0);
      return `| ${run.name} | ${run.inFlight} | ${cells.map((ms) => ms.toFixed(1)).join(' | ')} | ${cells.reduce((a, b) => a + b, 0).toFixed(1)} |`;
    }),
    '',
    `Validation of a 2,000-asset manifest (a dependency chain, every asset with a schema), the pure rules the ingest runs: median ${median(validationMs).toFixed(0)} ms of 7 (max ${Math.max(...validationMs).toFixed(0)} ms).`,
    '',
    `workflow-worker RSS: ${idleRss.toFixed(0)} MB at idle (before the load above), ${loadedRss.toFixed(0)} MB after it.`,
    ...split,
  ];
}
