// Ingest and activation through the gateway against a raw `client.workflow.execute` of
// no-op workflows of the same shape, on the same Temporal server, at 1 and 10 in flight.
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { validateManifest } from '@envengine/manifest-rules';
import { makeBundle, manifestOf } from '@envengine/test-harness';
import { median, type Bench } from './harness.ts';
import type { SuiteContext } from './suite-context.ts';

interface LatencyRun {
  name: string;
  inFlight: number;
  count: number;
  p50: number;
  p99: number;
  perSecond: number;
  failures: number;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/** Runs `operation` `count` times with `inFlight` at once; latency per call and calls per second. */
async function measureCalls(name: string, inFlight: number, count: number, operation: (i: number) => Promise<boolean>): Promise<LatencyRun> {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
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
  const run = { name, inFlight, count, p50: percentile(latencies, 50), p99: percentile(latencies, 99), perSecond: count / seconds, failures };
  console.error(`  ${name}, ${inFlight} in flight: p50 ${run.p50.toFixed(1)} ms, p99 ${run.p99.toFixed(1)} ms, ${run.perSecond.toFixed(1)}/s, ${failures} failed`);
  return run;
}

export async function deploymentsSuite(bench: Bench, { stack, auth }: SuiteContext): Promise<string[]> {
  const { services, servers } = stack;
  const api = `${services.gatewayUrl}/api/v1`;
  const json = { ...auth, 'content-type': 'application/json' };
  const post = (path: string, body: unknown) => fetch(`${api}${path}`, { method: 'POST', headers: json, body: JSON.stringify(body) });

  await post('/environments', { name: 'deploy-bench', storage_prefix: 's3://lake/db', executor: 'local' });
  await fetch(`${api}/environments/deploy-bench/bindings/warehouse`, { method: 'PUT', headers: json, body: '{}' });
  const keys = ['raw_orders', 'orders', 'customers', 'revenue', 'report'];
  const bundle = await makeBundle(Object.fromEntries(keys.map((key) => [`assets/${key}.js`, 'export default async () => {}'])));
  const uploaded = await fetch(`${api}/bundles`, { method: 'POST', headers: { ...auth, 'content-type': 'application/gzip' }, body: bundle });
  const bundleRef = ((await uploaded.json()) as { data: { bundle_ref: string } }).data.bundle_ref;
  const manifest = manifestOf(
    keys.map((key, i) => ({ key, deps: i === 0 ? [] : [keys[i - 1]!], columns: [{ name: 'id', type: 'integer' }, { name: 'value', type: 'number', nullable: true }] })),
  );
  const ingest = async () => (await post('/environments/deploy-bench/deployments', { manifest, bundle_ref: bundleRef })).status === 201;

  // The raw baseline: a worker in this process for the no-op workflows, on a queue of its own.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const taskQueue = `bench-noop-${randomBytes(4).toString('hex')}`;
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./noop.workflow.ts', import.meta.url)), logger: undefined });
  const workerConnection = await NativeConnection.connect({ address: servers.temporal.url });
  const worker = await Worker.create({
    connection: workerConnection,
    taskQueue,
    workflowBundle,
    activities: { noop: async () => undefined },
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: servers.temporal.url });
  const client = new Client({ connection });
  const rawExecute = async (i: number) => {
    const id = `${randomBytes(6).toString('hex')}-${i}`;
    await client.workflow.execute('noopIngest', { workflowId: `noop-ingest-${id}`, taskQueue, args: [id] });
    return true;
  };

  const runs: LatencyRun[] = [];
  try {
    for (let i = 0; i < 5; i += 1) {
      await rawExecute(i);
      await ingest();
    }
    const list = (await (await fetch(`${api}/environments/deploy-bench/deployments?limit=2`, { headers: auth })).json()) as { data: Array<{ id: string }> };
    const [newer, older] = list.data.map((row) => row.id);
    const activate = async (i: number) => (await post(`/deployments/${i % 2 === 0 ? older : newer}/activate`, {})).status === 200;
    for (const [inFlight, count] of [
      [1, 40],
      [10, 150],
    ] as const) {
      runs.push(await measureCalls('raw client.workflow.execute, no-op ingest-shaped workflow', inFlight, count, rawExecute));
      runs.push(await measureCalls('ingest through the gateway (5 assets, activate)', inFlight, count, ingest));
      runs.push(await measureCalls('activation through the gateway', inFlight, count, activate));
    }
  } finally {
    worker.shutdown();
    await running;
    await workerConnection.close();
    await connection.close();
  }

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
    `Validation of a 2,000-asset manifest (a dependency chain, every asset with a schema), the pure rules the ingest workflow runs: median ${median(validationMs).toFixed(0)} ms of 7 (max ${Math.max(...validationMs).toFixed(0)} ms).`,
  ];
}
