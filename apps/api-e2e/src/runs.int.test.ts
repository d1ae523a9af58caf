import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { AssetListing, dataEnvelope, Run } from '@envengine/contracts';
import { createTenant, deployProject, replicaLogFiles, until, type TestTenant } from '@envengine/test-harness';
import { z } from 'zod';
import { deployRunsProject, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');
const AssetList = dataEnvelope(z.array(AssetListing));

describe('runs on the engine host (local)', () => {
  let tenant: TestTenant;
  let other: TestTenant;
  let lake: string;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'runs');
    other = await createTenant(stack, 'runs-other');
    lake = join(stack.dataDir, 'lake', tenant.tenantId);
    await deployRunsProject(tenant, lake, 'local');
  });

  it('refuses a run where no deployment is active, and bad bodies, changing nothing', async () => {
    await tenant.api.post('/environments', { name: 'empty', storage_prefix: `file://${lake}-empty`, executor: 'local' });
    const none = await tenant.api.post('/environments/empty/runs', { job: 'all' });
    expect(none.status).toBe(409);
    expect(none.body.error.code).toBe('no_active_deployment');

    const unknown = await tenant.api.post('/environments/prod/runs', { assets: ['orders', 'nope', 'nada'] });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.details).toEqual([
      { path: 'assets.1', message: 'unknown asset "nope"' },
      { path: 'assets.2', message: 'unknown asset "nada"' },
    ]);
    const unknownJob = await tenant.api.post('/environments/prod/runs', { job: 'missing' });
    expect([unknownJob.status, unknownJob.body.error.details]).toEqual([422, [{ path: 'job', message: 'unknown job "missing"' }]]);
    for (const body of [{ job: 'all', assets: ['orders'] }, {}, { job: 'all', max_attempts: 0 }, { job: 'all', max_attempts: 11 }, { job: 'all', priority: 1 }]) {
      const response = await tenant.api.post('/environments/prod/runs', body);
      expect([response.status, response.body.error.code]).toEqual([422, 'invalid_request']);
    }
    expect((await tenant.api.post('/environments/nope/runs', { job: 'all' })).status).toBe(404);
    expect((await tenant.api.get('/environments/prod/runs')).body.data).toEqual([]);
  });

  it('runs a job: assets in dependency order, Parquet files written, materializations visible with the stored columns', async () => {
    const created = await tenant.api.post('/environments/prod/runs', { job: 'all' });
    expect(created.status).toBe(201);
    const run = Run.parse(created.body.data);
    expect(run).toMatchObject({ status: 'queued', trigger: 'manual', schedule: null, job: 'all', assets: ['orders', 'totals'], max_attempts: 1 });
    expect(run.attempts).toHaveLength(1);
    expect(run.attempts[0]).toMatchObject({ number: 1, executor: 'local' });

    const finished = await waitForRun(tenant, run.id);
    expect(finished.status).toBe('succeeded');
    expect(finished.finished_at).not.toBeNull();
    const [attempt] = finished.attempts;
    expect(attempt).toMatchObject({ status: 'succeeded', executor: 'local', error: null });
    expect(attempt!.assets.map((asset) => [asset.key, asset.status])).toEqual([
      ['orders', 'succeeded'],
      ['totals', 'succeeded'],
    ]);

    const assets = AssetList.parse((await tenant.api.get('/environments/prod/assets')).body).data;
    const orders = assets.find((asset) => asset.key === 'orders')!.latest_materialization!;
    expect(orders).toMatchObject({ status: 'latest', row_count: 3, run_id: run.id, id: attempt!.assets[0]!.materialization_id });
    expect(orders.columns).toEqual([
      { name: 'id', type: 'integer', nullable: false },
      { name: 'amount', type: 'number', nullable: true },
    ]);
    expect(orders.location).toBe(`file://${lake}/orders/${orders.id}.parquet`);
    expect(existsSync(fileURLToPath(orders.location!))).toBe(true);
    // totals read orders through ctx.read: 3 rows summing to 30.5.
    const totals = assets.find((asset) => asset.key === 'totals')!.latest_materialization!;
    expect(totals.row_count).toBe(1);

    const logs = (await tenant.api.get(`/runs/${run.id}/logs`)).body.data as Array<{ message: string; asset: string }>;
    expect(logs.map((line) => [line.asset, line.message])).toEqual(
      expect.arrayContaining([
        ['orders', 'making 3 orders'],
        ['totals', 'read 3 orders, total 30.5'],
      ]),
    );
    // Paging through the logs with the cursor.
    const first = (await tenant.api.get(`/runs/${run.id}/logs?limit=1`)).body.data;
    const rest = (await tenant.api.get(`/runs/${run.id}/logs?after=${encodeURIComponent(first[0].cursor)}`)).body.data;
    expect([...first, ...rest]).toEqual(logs);

    const list = (await tenant.api.get('/environments/prod/runs?status=succeeded')).body.data as Run[];
    expect(list.map((item) => item.id)).toContain(run.id);
    expect((await tenant.api.get('/environments/prod/runs?status=failed')).body.data.map((item: Run) => item.id)).not.toContain(run.id);

    const cancel = await tenant.api.post(`/runs/${run.id}/cancel`, {});
    expect([cancel.status, cancel.body.error.code]).toEqual([409, 'run_finished']);
    expect((await tenant.api.get(`/runs/${run.id}`)).body.data.status).toBe('succeeded');
  });

  it("hides a tenant's runs from another tenant (404 on get, logs and cancel)", async () => {
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data);
    for (const [method, path] of [['GET', `/runs/${run.id}`], ['GET', `/runs/${run.id}/logs`], ['POST', `/runs/${run.id}/cancel`]] as const) {
      const response = await other.api.request(method, path, method === 'POST' ? { json: {} } : {});
      expect([response.status, response.body.error.code]).toEqual([404, 'not_found']);
    }
    expect((await other.api.get('/environments/prod/runs')).status).toBe(404);
    await waitForRun(tenant, run.id);
  });

  it('fails an emit on a read_only binding before any I/O, naming the binding', async () => {
    await tenant.api.put('/environments/prod/bindings/warehouse', { mode: 'read_only' });
    try {
      const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data);
      const finished = await waitForRun(tenant, run.id);
      expect(finished.status).toBe('failed');
      expect(finished.error).toContain('binding "warehouse"');
      expect(finished.error).toContain('read_only');
      expect(finished.attempts[0]!.assets[0]).toMatchObject({ key: 'orders', status: 'failed', materialization_id: null });
    } finally {
      await tenant.api.put('/environments/prod/bindings/warehouse', {});
    }
  });

  it('fails rows that break the declared schema, naming the column and the row', async () => {
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['bad_rows'] })).body.data);
    const finished = await waitForRun(tenant, run.id);
    expect(finished.status).toBe('failed');
    expect(finished.error).toMatch(/row 1/);
    expect(finished.error).toContain('"amount"');
  });

  it.each([
    ['throws', 'thrower', /boom from user code/],
    ['exits', 'exiter', /exited with code 3/],
    ['loops forever', 'looper', /time limit/],
    ['allocates without bound', 'hog', /out of memory/],
  ])('fails an attempt whose code %s, and the worker survives', async (_what, asset, error) => {
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: [asset] })).body.data);
    const finished = await waitForRun(tenant, run.id, 30_000);
    expect(finished.status).toBe('failed');
    expect(finished.attempts[0]!.error).toMatch(error);
    const after = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data);
    expect((await waitForRun(tenant, after.id)).status).toBe('succeeded');
  });

  it("keeps a thrown error's place in the code: its name, message and bundle-relative file:line, in the run, its asset and its logs", async () => {
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['thrower'] })).body.data);
    const finished = await waitForRun(tenant, run.id);
    expect(finished.status).toBe('failed');
    const place = /^Error: boom from user code\n {4}at (?:[\w.]+ )?\(?assets\/thrower\.js:1:\d+\)?$/;
    const asset = finished.attempts[0]!.assets.find((candidate) => candidate.key === 'thrower')!;
    expect(asset.error).toMatch(place);
    expect(finished.attempts[0]!.error).toContain('assets/thrower.js:1:');
    const lines = ((await tenant.api.get(`/runs/${run.id}/logs`)).body.data as Array<{ message: string }>).map((line) => line.message);
    expect(lines.some((line) => /at (?:[\w.]+ )?\(?assets\/thrower\.js:1:\d+/.test(line))).toBe(true);
    // Nothing of where the engine keeps the bundle, or of its own code, is shown.
    for (const text of [asset.error!, finished.attempts[0]!.error!, ...lines]) {
      expect(text).not.toMatch(/\/bundle\/|asset-child|node:internal|file:\/\//);
    }
  });

  it("stops an asset at its manifest timeout_seconds and a run at the run's, naming which limit fired", async () => {
    // napper sleeps forever and its manifest entry says timeout_seconds 1 (the runner's own limit here is 4 s).
    const byAsset = await waitForRun(tenant, Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['napper'] })).body.data).id);
    expect(byAsset.status).toBe('failed');
    expect(byAsset.attempts[0]!.assets[0]!.error).toMatch(/time limit of 1000 ms: timeout_seconds of asset "napper" in the manifest \(1 s\)/);

    const created = await tenant.api.post('/environments/prod/runs', { assets: ['sleeper'], timeout_seconds: 1 });
    expect(created.status).toBe(201);
    expect(created.body.data.timeout_seconds).toBe(1);
    const byRun = await waitForRun(tenant, created.body.data.id);
    expect(byRun.status).toBe('failed');
    expect(byRun.attempts[0]!.assets[0]!.error).toMatch(/timeout_seconds of the run \(1 s, from its start\)/);
    // Stopped by the limit, well before the runner's own 4 s.
    expect(Date.parse(byRun.finished_at!) - Date.parse(byRun.started_at!)).toBeLessThan(4000);

    for (const timeout of [0, 1.5, 86_401, '5']) {
      const refused = await tenant.api.post('/environments/prod/runs', { assets: ['sleeper'], timeout_seconds: timeout });
      expect(refused.status, String(timeout)).toBe(422);
      expect(refused.body.error.details.map((detail: { path: string }) => detail.path)).toContain('timeout_seconds');
    }
  });

  it('retries a failed attempt as a new attempt, re-running only what no attempt materialized', async () => {
    // flaky_total fails on attempt 1 after orders succeeded; attempt 2 runs flaky_total only.
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { job: 'flaky', max_attempts: 2 })).body.data);
    const finished = await waitForRun(tenant, run.id);
    expect(finished.status).toBe('succeeded');
    expect(finished.attempts.map((attempt) => [attempt.number, attempt.status])).toEqual([
      [1, 'failed'],
      [2, 'succeeded'],
    ]);
    expect(finished.attempts[1]!.assets.map((asset) => asset.key)).toEqual(['flaky_total']);
  });

  it('a retry re-runs only the assets no earlier attempt materialized: one that emitted, then threw, is not run again', async () => {
    const columns = [{ name: 'id', type: 'integer' }];
    const asset = (key: string, deps: string[] = []) => ({ key, binding: 'warehouse', entry: `assets/${key}.js`, deps, schema: { columns } });
    await deployProject(tenant.api, {
      environment: 'partial',
      storagePrefix: `file://${lake}-partial`,
      executor: 'local',
      bindings: { warehouse: {} },
      files: {
        'assets/source.js': 'export default async (ctx) => { await ctx.emit([{ id: 1 }]); };',
        'assets/emits_then_throws.js': `export default async (ctx) => {
          await ctx.emit([{ id: ctx.run.attempt }]);
          if (ctx.run.attempt === 1) throw new Error('thrown after its emit');
        };`,
        'assets/downstream.js': "export default async (ctx) => { await ctx.emit(await ctx.read('emits_then_throws')); };",
      },
      manifest: { version: 1, assets: [asset('source'), asset('emits_then_throws', ['source']), asset('downstream', ['emits_then_throws'])], jobs: [], schedules: [] },
    });
    const created = await tenant.api.post('/environments/partial/runs', { assets: ['source', 'emits_then_throws', 'downstream'], max_attempts: 2 });
    expect(created.status, created.text).toBe(201);
    const run = Run.parse(created.body.data);
    const finished = await waitForRun(tenant, run.id);
    expect(finished.attempts.map((attempt) => [attempt.number, attempt.status])).toEqual([
      [1, 'failed'],
      [2, 'succeeded'],
    ]);
    expect(finished.attempts[0]!.assets.find((outcome) => outcome.key === 'emits_then_throws')).toMatchObject({ status: 'failed', materialization_id: expect.stringMatching(/^mat_/) });
    // Its rows of attempt 1 stand: the retry runs only what is downstream of it.
    expect(finished.attempts[1]!.assets.map((outcome) => outcome.key)).toEqual(['downstream']);
    expect(finished.status).toBe('succeeded');
  });

  it('cancels a running attempt: the run is canceled and its code stops', async () => {
    const run = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['sleeper'] })).body.data);
    await until(() => tenant.api.get(`/runs/${run.id}`), (response) => response.body.data.attempts[0].status === 'running', 20_000);
    // The runner's heartbeat names the asset it works on: the attempt shows it running.
    const working = await until(() => tenant.api.get(`/runs/${run.id}`), (response) => response.body.data.attempts[0].assets[0]?.status !== 'pending', 20_000);
    expect(working.body.data.attempts[0].assets).toMatchObject([{ key: 'sleeper', status: 'running' }]);
    const canceled = await tenant.api.post(`/runs/${run.id}/cancel`, {});
    expect(canceled.status).toBe(200);
    expect(canceled.body.data).toMatchObject({ status: 'canceled' });
    expect(canceled.body.data.attempts[0].status).toBe('canceled');
    // Its unfinished asset says canceled, not pending or running.
    expect(canceled.body.data.attempts[0].assets).toMatchObject([{ key: 'sleeper', status: 'canceled' }]);
    // The engine's runner learns of the cancel at its next heartbeat, stops the sleeper's
    // sandboxed child, and says the attempt is done only once that child has exited.
    const attemptId = canceled.body.data.attempts[0].id as string;
    // Whichever of the engine's runners ran it.
    const runnerLogs = replicaLogFiles(stack, 'attempt-worker').map((file) => join(stack.dataDir, 'logs', file));
    const done = await until(
      async () =>
        runnerLogs
          .map((file) => readFileSync(file, 'utf8'))
          .join('\n')
          .split('\n')
          .filter((line) => line.includes(attemptId))
          .map((line) => JSON.parse(line) as { msg: string; result?: string; reason?: string }),
      (lines) => lines.some((line) => line.msg === 'attempt done'),
      15_000,
    );
    expect(done.map((line) => line.msg)).toContain('lease superseded (canceled or presumed lost): stopping the attempt');
    // Stopped because of the cancel (the abort), not by its time limit.
    expect(done.find((line) => line.msg === 'asset stopped')?.reason).toBe('canceled');
    expect(done.find((line) => line.msg === 'attempt done')?.result).toBe('superseded');
    const after = (await tenant.api.get(`/runs/${run.id}`)).body.data;
    expect(after.status).toBe('canceled');
    // The runner's late report of the stopped asset changes nothing.
    expect(after.attempts[0].assets).toMatchObject([{ key: 'sleeper', status: 'canceled' }]);
  });
});
