import { PoolCredentialIssued, Run } from '@envengine/contracts';
import type { StackInfo } from '@envengine/test-harness';
import { expect } from 'vitest';
import { deployProject, until, type TestTenant } from '@envengine/test-harness';

/**
 * Short leases and limits so that a lost worker, an endless loop or an undelivered
 * dispatch is seen in seconds (the defaults are 15 s, 15 min and 5 s).
 */
export const RUN_TEST_SETTINGS = {
  ATTEMPT_LEASE_TTL_MS: '4000',
  HEARTBEAT_INTERVAL_MS: '500',
  DISPATCH_RECONCILE_INTERVAL_MS: '1000',
  ASSET_TIMEOUT_MS: '4000',
  ASSET_MEMORY_MB: '128',
};

/** Real asset code: orders → totals through ctx.read, and assets that misbehave on purpose. */
export const ASSET_CODE: Record<string, string> = {
  'assets/orders.js': `export default async (ctx) => {
    ctx.log('making 3 orders');
    await ctx.emit([{ id: 1, amount: 10.5 }, { id: 2, amount: null }, { id: 3, amount: 20 }]);
  };`,
  'assets/totals.js': `export default async (ctx) => {
    const rows = await ctx.read('orders');
    const total = rows.reduce((sum, row) => sum + (row.amount ?? 0), 0);
    ctx.log(\`read \${rows.length} orders, total \${total}\`);
    await ctx.emit([{ orders: rows.length, total }]);
  };`,
  'assets/bad_rows.js': `export default async (ctx) => { await ctx.emit([{ id: 1, amount: 1 }, { id: 2, amount: 'two' }]); };`,
  'assets/thrower.js': `export default async () => { throw new Error('boom from user code'); };`,
  'assets/exiter.js': `export default async () => { process.exit(3); };`,
  'assets/looper.js': `export default async () => { for (;;) {} };`,
  'assets/hog.js': `export default async () => { const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random())); };`,
  'assets/flaky_total.js': `export default async (ctx) => {
    if (ctx.run.attempt === 1) throw new Error('first attempt fails on purpose');
    await ctx.emit([{ orders: 1, total: 1 }]);
  };`,
  'assets/napper.js': `export default async () => { for (;;) await new Promise((resolve) => setTimeout(resolve, 100)); };`,
  'assets/sleeper.js': `export default async (ctx) => {
    for (;;) { ctx.log('tick'); await new Promise((resolve) => setTimeout(resolve, 100)); }
  };`,
  // Waits until the "gate" binding's config says open (the test opens it), then fails on
  // attempt 1 when told to, so that a test can act while an attempt is running.
  'assets/gated.js': `export default async (ctx) => {
    for (;;) {
      const gate = await ctx.connection('gate');
      if (gate.open) { if (gate.fail_attempt === ctx.run.attempt) throw new Error('gate says fail'); break; }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await ctx.emit([{ attempt: ctx.run.attempt }]);
  };`,
};

const orders = [{ name: 'id', type: 'integer' }, { name: 'amount', type: 'number', nullable: true }];
const totals = [{ name: 'orders', type: 'integer' }, { name: 'total', type: 'number' }];

export function runsManifest(binding = 'warehouse'): Record<string, unknown> {
  const asset = (key: string, columns: unknown[] | null, deps: string[] = [], on = binding) => ({
    key,
    binding: on,
    entry: `assets/${key}.js`,
    deps,
    ...(columns ? { schema: { columns } } : {}),
  });
  return {
    version: 1,
    assets: [
      asset('orders', orders),
      asset('totals', totals, ['orders']),
      asset('bad_rows', orders),
      asset('thrower', null),
      asset('exiter', null),
      asset('looper', null),
      asset('hog', null),
      asset('flaky_total', totals, ['orders']),
      asset('sleeper', null),
      { ...asset('napper', null), timeout_seconds: 1 },
      asset('gated', [{ name: 'attempt', type: 'integer' }], [], 'gate'),
    ],
    jobs: [
      { name: 'all', assets: ['orders', 'totals'] },
      { name: 'flaky', assets: ['orders', 'flaky_total'] },
    ],
    schedules: [],
  };
}

const TERMINAL = new Set(['succeeded', 'failed', 'canceled']);

/** Polls the run until it is terminal (evidence, not a sleep), and returns it. */
export async function waitForRun(tenant: TestTenant, runId: string, timeoutMs = 30_000): Promise<Run> {
  const response = await until(() => tenant.api.get(`/runs/${runId}`), (r) => TERMINAL.has(r.body?.data?.status), timeoutMs, 100);
  return Run.parse(response.body.data);
}

/**
 * Environment `prod` on a `file://` lake under `lakeDir`, with the `warehouse` and (closed)
 * `gate` bindings, and the runs project deployed and active. Returns the bundle ref.
 */
export function deployRunsProject(tenant: TestTenant, lakeDir: string, executor: 'local' | 'remote'): Promise<string> {
  return deployProject(tenant.api, {
    environment: 'prod',
    storagePrefix: `file://${lakeDir}`,
    executor,
    bindings: { warehouse: {}, gate: { config: { open: false } } },
    files: ASSET_CODE,
    manifest: runsManifest(),
  });
}

/** The runs project deployed to a new environment on `prefix`; its `warehouse` binding names no store (the engine's). */
export async function deployOnS3(tenant: TestTenant, environment: string, prefix: string, executor: 'local' | 'remote'): Promise<void> {
  await deployProject(tenant.api, {
    environment,
    storagePrefix: prefix,
    executor,
    bindings: { warehouse: {}, gate: { config: { open: true } } },
    files: ASSET_CODE,
    manifest: runsManifest(),
  });
}

/** A pool credential of the tenant: its token opens the worker API only. */
export async function issueCredential(tenant: TestTenant): Promise<PoolCredentialIssued> {
  const response = await tenant.api.post('/pool/credentials', { label: 'test' });
  expect(response.status).toBe(201);
  return PoolCredentialIssued.parse(response.body.data);
}

/** An address an asset tries to reach, by name in its report. */
export interface ProbeTarget {
  name: string;
  host: string;
  port: number;
}

/** Every port of the engine host's servers and services in this stack: what no asset may reach. */
export function engineTargets(stack: StackInfo): ProbeTarget[] {
  const urls: Record<string, string> = {
    ...stack.urls,
    gateway: stack.gatewayUrl,
    // The first host of the URL (a replica set's list), as http: so that URL parses it.
    mongodb: `http://${stack.mongoUrl.replace(/^mongodb:\/\//, '').split(/[,/]/)[0]}`,
    // The first node of a Redis Cluster (each node is in serverAddresses too).
    redis: stack.redisUrl.split(',')[0]!.replace(/^redis:\/\//, 'http://'),
    temporal: `http://${stack.temporalAddress}`,
    ...(stack.objectStore ? { 'object-store': stack.objectStore.url } : {}),
    // Each MongoDB member, PostgreSQL and each Temporal process of the cluster profile.
    ...Object.fromEntries(Object.entries(stack.serverAddresses).map(([name, address]) => [name, `http://${address}`])),
  };
  return Object.entries(urls).map(([name, url]) => ({ name, host: new URL(url).hostname, port: Number(new URL(url).port) }));
}

/**
 * An asset that runs `extra` (with `report`, `fs` and `ctx` in scope), then, given a
 * binding, tries each target of its config (`targets`), and logs and emits the JSON report:
 * target name → what the connection said (`answered <data>`, `closed`, `timeout` or the
 * error code).
 */
export function probeAsset(binding: string | null, extra = ''): string {
  return `import * as fs from 'node:fs';
import * as net from 'node:net';
const attempt = (host, port) => new Promise((resolve) => {
  const socket = net.connect({ host, port, timeout: 3000 });
  socket.on('data', (data) => { socket.destroy(); resolve('answered ' + data); });
  socket.on('end', () => resolve('closed'));
  socket.on('timeout', () => { socket.destroy(); resolve('timeout'); });
  socket.on('error', (error) => resolve(error.code));
});
export default async (ctx) => {
  const report = {};
  ${extra}
  const { targets = [] } = ${binding === null ? '{}' : `await ctx.connection(${JSON.stringify(binding)})`};
  for (const target of targets) report[target.name] = await attempt(target.host, target.port);
  ctx.log(JSON.stringify(report));
  await ctx.emit([{ report: JSON.stringify(report) }]);
};`;
}
