import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { pack } from 'msgpackr';
import { connectPoolRedis, poolWorkerScripts } from '@envengine/attempt-queues';
import { connectRedis } from '@envengine/redis-connections';
import { encodeCommand } from '@envengine/redis-gate';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Run } from '@envengine/contracts';
import { createTenant, deployProject, until, type TestTenant } from '@envengine/test-harness';
import { deployRunsProject, issueCredential, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');

/** The victim's runs timed in each phase. */
const RUNS = 10;
/** Connections of the attacker that pipeline INFO and never read (a few percent of the 2,048 the gate holds). */
const UNREAD_CONNECTIONS = 10;
const INFO_PER_CONNECTION = 1000;
/** The attacker's queued runs (their jobs wait in its queue: no worker takes them). */
const ATTACKER_JOBS = 5;

const files = { 'assets/quick.js': `export default async (ctx) => { await ctx.emit([{ report: 'quick' }]); };` };
const manifest = {
  version: 1,
  assets: [{ key: 'quick', binding: 'lake', entry: 'assets/quick.js', deps: [], schema: { columns: [{ name: 'report', type: 'string' }] } }],
  jobs: [],
  schedules: [],
};

/** One trivial run of the victim, from its POST to its end as the API shows it. */
async function timedRun(tenant: TestTenant): Promise<number> {
  const started = performance.now();
  const response = await tenant.api.post('/environments/prod/runs', { assets: ['quick'] });
  expect(response.status, response.text).toBe(201);
  const finished = await waitForRun(tenant, Run.parse(response.body.data).id, 60_000);
  expect(finished.status).toBe('succeeded');
  return performance.now() - started;
}

const p99 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * 0.99) - 1)]!;

/** The placement-service's memory outside its heap, where Buffers live (the pool gate's replies among them), from its /metrics (prom-client's Node metrics). */
async function placementBufferMemory(): Promise<number> {
  const text = await (await fetch(`${stack.urls['placement-service']}/metrics`)).text();
  return Number(/^envengine_nodejs_external_memory_bytes(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1]);
}

describe("an attacking pool beside another tenant's runs", () => {
  const sockets: Socket[] = [];
  const admin = connectRedis(stack.redisUrl, { maxRetriesPerRequest: 3 });
  afterAll(() => {
    for (const socket of sockets) socket.destroy();
    admin.disconnect();
  });

  it("refuses the pool's foreign prefixes, huge tokens, endless locks and unread INFO, and the victim's runs stay as fast", async () => {
    const victim = await createTenant(stack, 'gate-victim');
    await deployProject(victim.api, { environment: 'prod', storagePrefix: `file://${join(stack.dataDir, 'lake', victim.tenantId, 'prod')}`, executor: 'local', bindings: { lake: {} }, files, manifest });
    const attacker = await createTenant(stack, 'gate-attacker');
    await deployRunsProject(attacker, join(stack.dataDir, 'lake', attacker.tenantId), 'remote');
    const credential = await issueCredential(attacker);
    for (let index = 0; index < ATTACKER_JOBS; index++) expect((await attacker.api.post('/environments/prod/runs', { assets: ['orders'] })).status).toBe(201);
    const base = `envengine:{${credential.queue}}:`;
    await until(() => admin.llen(`${base}wait`), (waiting) => waiting === ATTACKER_JOBS, 30_000);

    // One run first, so that neither phase pays for the runner's first fetch of the bundle.
    await timedRun(victim);
    const quiet: number[] = [];
    for (let index = 0; index < RUNS; index++) quiet.push(await timedRun(victim));

    const memoryBefore = Number(/used_memory:(\d+)/.exec((await admin.info('memory')) as string)?.[1]);
    const buffersBefore = await placementBufferMemory();
    // Unread replies: connections that pipeline INFO everything and never read, held open while the victim's runs are timed.
    const info = encodeCommand(['INFO', 'everything']);
    for (let index = 0; index < UNREAD_CONNECTIONS; index++) {
      const url = new URL(credential.redis.url!);
      const socket = connect({ host: url.hostname, port: Number(url.port) });
      socket.pause();
      socket.on('error', () => undefined);
      sockets.push(socket);
      socket.write(Buffer.concat([encodeCommand(['AUTH', credential.redis.username, credential.redis.password]), ...Array.from({ length: INFO_PER_CONNECTION }, () => info)]));
    }
    // BullMQ's moveToActive, with a fresh prefix and a 200 KiB token, or a lock of ~115 days: each would take one of its jobs.
    const gated = connectPoolRedis(credential.redis.url!, credential.redis, { maxRetriesPerRequest: 1 });
    const moveToActive = poolWorkerScripts().find((script) => script.name === 'moveToActive')!;
    const keys = ['wait', 'active', 'prioritized', 'events', 'stalled', 'limiter', 'delayed', 'paused', 'meta', 'pc', 'marker'].map((key) => `${base}${key}`);
    const attack = (prefix: string, opts: Record<string, unknown>) => gated.call('EVALSHA', moveToActive.sha1, 11, ...keys, prefix, Date.now(), pack(opts)).then(() => 'allowed', (error: Error) => error.message);
    const refusals: string[] = [];
    try {
      for (let index = 0; index < ATTACKER_JOBS; index++) {
        refusals.push(await attack(`${base}fresh-${index}:`, { token: 't'.repeat(200 * 1024), lockDuration: 30_000 }));
        refusals.push(await attack(base, { token: 't'.repeat(200 * 1024), lockDuration: 30_000 }));
        refusals.push(await attack(base, { token: 'w:1', lockDuration: 10 ** 10 }));
      }
      const loaded: number[] = [];
      for (let index = 0; index < RUNS; index++) loaded.push(await timedRun(victim));
      const memoryGrowth = Number(/used_memory:(\d+)/.exec((await admin.info('memory')) as string)?.[1]) - memoryBefore;
      const bufferGrowth = (await placementBufferMemory()) - buffersBefore;
      console.log(`pool gate attack: victim p99 quiet ${Math.round(p99(quiet))} ms, under attack ${Math.round(p99(loaded))} ms; Redis used_memory ${memoryGrowth} bytes more, the placement-service's external (Buffer) memory ${bufferGrowth} bytes more; the gate answered ${JSON.stringify([...new Set(refusals.map((refusal) => refusal.slice(0, 90)))])}`);

      for (const refusal of refusals) expect(refusal).toMatch(/^NOPERM the pool gate does not pass moveToActive with argument (1|3) refused/);
      // The attacker's jobs still wait (none was taken under a prefix of its choosing), and Redis holds no more than before (give or take the victim's runs).
      expect(await admin.llen(`${base}wait`)).toBe(ATTACKER_JOBS);
      expect(memoryGrowth).toBeLessThan(2 * 1024 * 1024);
      // 10,000 unread INFO replies (about 5 KB each) held by the gate would be some 50 MB.
      expect(bufferGrowth).toBeLessThan(10 * 1024 * 1024);
      expect(p99(loaded)).toBeLessThanOrEqual(2 * p99(quiet) + 1000);
    } finally {
      gated.disconnect();
    }
  }, 240_000);
});
