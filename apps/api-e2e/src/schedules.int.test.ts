import { join } from 'node:path';
import { Client, Connection, ScheduleOverlapPolicy } from '@temporalio/client';
import { MongoClient } from 'mongodb';
// The SDK's own Timestamp conversions (the gRPC request takes protobuf Timestamps).
import { msToTs, tsToMs } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { dataEnvelope, Environment, Run, Schedule, ScheduleNextFireTimes } from '@envengine/contracts';
import { isDroppedTick, parseCronExpression, type ParsedCron } from '@envengine/schedule-timing';
import { PlacementClient } from '@envengine/service-clients';
import { createTenant, deployProject, until, type TestTenant } from '@envengine/test-harness';
import { ASSET_CODE, runsManifest, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');
const ScheduleList = dataEnvelope(z.array(Schedule));
const RunList = dataEnvelope(z.array(Run));

const FILES = {
  ...ASSET_CODE,
  // Long enough that a per-second schedule's next ticks find it still running.
  'assets/slow.js': `export default async (ctx) => {
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await ctx.emit([{ id: 1, amount: 1 }]);
  };`,
};

const EVERY_SECOND = { name: 'every_second', job: 'quick', cron: '* * * * * *', timezone: 'UTC' };
// 01:30 and 02:30 local: in both zones one of them is skipped in spring and one repeated in autumn.
const NIGHTLY_NEW_YORK = { name: 'nightly_ny', job: 'quick', cron: '30 1,2 * * *', timezone: 'America/New_York' };
const NIGHTLY_BERLIN = { name: 'nightly_berlin', job: 'quick', cron: '30 1,2 * * *', timezone: 'Europe/Berlin' };

function manifestWith(schedules: object[]): Record<string, unknown> {
  const base = runsManifest();
  const orders = (base['assets'] as Array<{ key: string; schema?: unknown }>).find((asset) => asset.key === 'orders')!;
  return {
    ...base,
    assets: [...(base['assets'] as object[]), { key: 'slow', binding: 'warehouse', entry: 'assets/slow.js', deps: [], schema: orders.schema }],
    jobs: [...(base['jobs'] as object[]), { name: 'quick', assets: ['orders'] }, { name: 'slow', assets: ['slow'] }],
    schedules,
  };
}

/**
 * The UTC instants at which `HH:30` for each hour in `hours` falls on every local day of
 * `year` in `timeZone`, by the rule: a repeated wall time fires at its first occurrence, a
 * skipped one at the first instant after the jump. Worked out half hour by half hour from
 * the zone's offsets, independently of the product's calendar walk.
 */
function expectedFireTable(timeZone: string, hours: number[], year = 2026): string[] {
  const format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' });
  const wallOf = (instant: number) => {
    const parts = Object.fromEntries(format.formatToParts(new Date(instant)).map((part) => [part.type, part.value]));
    return `${parts['year']}-${parts['month']}-${parts['day']} ${parts['hour']}:${parts['minute']}`;
  };
  // Both zones change their offset on whole hours: one lookup per UTC hour gives the wall
  // time of its :00 and :30, which is all a schedule at :30 and a jump on the hour need.
  const minutes: Array<{ instant: number; wall: string }> = [];
  for (let hour = Date.parse(`${year - 1}-12-31T12:00:00Z`); hour < Date.parse(`${year + 1}-01-01T12:00:00Z`); hour += 3_600_000) {
    const wallAtHour = wallOf(hour);
    const base = Date.parse(`${wallAtHour.replace(' ', 'T')}:00Z`);
    for (const minute of [0, 30]) {
      minutes.push({ instant: hour + minute * 60_000, wall: new Date(base + minute * 60_000).toISOString().slice(0, 16).replace('T', ' ') });
    }
  }
  const firstAt = new Map<string, number>();
  for (const { instant, wall } of minutes) if (!firstAt.has(wall)) firstAt.set(wall, instant);
  const fires: number[] = [];
  for (let day = Date.parse(`${year}-01-01T00:00:00Z`); day < Date.parse(`${year + 1}-01-01T00:00:00Z`); day += 86_400_000) {
    for (const hour of hours) {
      const wall = `${new Date(day).toISOString().slice(0, 10)} ${String(hour).padStart(2, '0')}:30`;
      fires.push(firstAt.get(wall) ?? minutes.find((minute) => minute.wall > wall)!.instant);
    }
  }
  return fires.sort((a, b) => a - b).map((instant) => new Date(instant).toISOString());
}

/** The instant of a UTC schedule's tick key (its wall time in UTC, e.g. `2026-11-25T14:59:03`). */
function utcTickInstant(tick: string): number {
  return Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(tick) ? tick : `${tick}Z`);
}

describe('schedules', () => {
  let tenant: TestTenant;
  let other: TestTenant;
  let environment: Environment;
  let firstDeploymentId: string;
  let temporalConnection: Connection;
  let temporal: Client;

  const scheduledRuns = async (schedule = EVERY_SECOND.name): Promise<Run[]> => {
    const response = await tenant.api.get('/environments/prod/runs?limit=200');
    return RunList.parse(response.body).data.filter((run) => run.trigger === 'schedule' && run.schedule === schedule);
  };
  /** The tick of each scheduled run (kept with the run, not in its API view), as an instant. */
  const scheduledTicks = async (schedule = EVERY_SECOND.name): Promise<Array<{ id: string; tick: number }>> => {
    const mongo = await new MongoClient(stack.mongoUrl).connect();
    try {
      const runs = await mongo
        .db(stack.databases['placement-service'])
        .collection<{ _id: string; tenant_id: string; schedule: string; schedule_tick: string | null }>('runs')
        .find({ tenant_id: tenant.tenantId, schedule, schedule_tick: { $ne: null } })
        .toArray();
      return runs.map((run) => ({ id: run._id, tick: utcTickInstant(run.schedule_tick!) }));
    } finally {
      await mongo.close();
    }
  };
  const listSchedules = async (): Promise<Schedule[]> => {
    const response = await tenant.api.get('/environments/prod/schedules');
    expect(response.status).toBe(200);
    return ScheduleList.parse(response.body).data;
  };
  const temporalState = async (name: string) => {
    try {
      return (await temporal.schedule.getHandle(`sched-${environment.id}-${name}`).describe()).state.paused ? 'paused' : 'running';
    } catch {
      return 'missing';
    }
  };
  const deploy = async (schedules: object[]): Promise<string> => {
    const bundle = await tenant.api.get('/environments/prod');
    const active = await tenant.api.get(`/deployments/${bundle.body.data.active_deployment_id}`);
    const response = await tenant.api.post('/environments/prod/deployments', { manifest: manifestWith(schedules), bundle_ref: active.body.data.bundle_ref });
    expect(response.status, response.text).toBe(201);
    expect(response.body.data.status).toBe('ready');
    return response.body.data.id as string;
  };

  beforeAll(async () => {
    tenant = await createTenant(stack, 'schedules');
    other = await createTenant(stack, 'schedules-other');
    await deployProject(tenant.api, {
      environment: 'prod',
      storagePrefix: `file://${join(stack.dataDir, 'lake', tenant.tenantId)}`,
      executor: 'local',
      bindings: { warehouse: {}, gate: { config: { open: false } } },
      files: FILES,
      manifest: manifestWith([EVERY_SECOND, NIGHTLY_NEW_YORK, NIGHTLY_BERLIN]),
    });
    environment = Environment.parse((await tenant.api.get('/environments/prod')).body.data);
    firstDeploymentId = environment.active_deployment_id!;
    temporalConnection = await Connection.connect({ address: stack.temporalAddress });
    temporal = new Client({ connection: temporalConnection });
  });

  afterAll(async () => {
    // Nothing keeps firing into the tests that follow.
    await tenant?.api.post('/environments/prod/schedules/pause', {});
    await temporalConnection?.close();
  });

  it('fires a per-second schedule through the run path and lists it with its state', async () => {
    const runs = await until(() => scheduledRuns(), (found) => found.length >= 2, 30_000, 200);
    for (const run of runs) expect(run).toMatchObject({ trigger: 'schedule', schedule: 'every_second', job: 'quick', deployment_id: firstDeploymentId });
    const finished = await waitForRun(tenant, runs.at(-1)!.id);
    expect(finished.status).toBe('succeeded');

    const schedules = await listSchedules();
    expect(schedules.map((schedule) => schedule.name).sort()).toEqual(['every_second', 'nightly_berlin', 'nightly_ny']);
    const everySecond = schedules.find((schedule) => schedule.name === 'every_second')!;
    expect(everySecond).toMatchObject({ job: 'quick', cron: '* * * * * *', timezone: 'UTC', paused: false });
    // The next fire time is the schedule's, a whole second, after the tick of its last run.
    const lastRun = (await scheduledTicks()).find((run) => run.id === everySecond.last_run_id);
    expect(lastRun).toBeDefined();
    expect(Date.parse(everySecond.next_run_at!) % 1000).toBe(0);
    expect(Date.parse(everySecond.next_run_at!)).toBeGreaterThan(lastRun!.tick);
    expect(await temporalState('every_second')).toBe('running');
  });

  it('previews fire times across both 2026 clock changes in New York and Berlin by the DST rule', async () => {
    for (const schedule of [NIGHTLY_NEW_YORK, NIGHTLY_BERLIN]) {
      const response = await tenant.api.get(`/environments/prod/schedules/${schedule.name}/next?count=730&after=2026-01-01T00:00:00Z`);
      expect(response.status, response.text).toBe(200);
      const preview = ScheduleNextFireTimes.parse(response.body.data);
      const expected = expectedFireTable(schedule.timezone, [1, 2]);
      expect(preview.next).toHaveLength(730);
      expect(preview.next).toEqual(expected);
    }
    // The four transitions, spelled out: spring gaps fire at the jump, autumn repeats fire at the first occurrence.
    const ny = (await tenant.api.get('/environments/prod/schedules/nightly_ny/next?count=4&after=2026-03-08T00:00:00Z')).body.data.next;
    expect(ny).toEqual(['2026-03-08T06:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-09T05:30:00.000Z', '2026-03-09T06:30:00.000Z']);
    const nyAutumn = (await tenant.api.get('/environments/prod/schedules/nightly_ny/next?count=2&after=2026-11-01T00:00:00Z')).body.data.next;
    expect(nyAutumn).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-01T07:30:00.000Z']);
    const berlin = (await tenant.api.get('/environments/prod/schedules/nightly_berlin/next?count=2&after=2026-03-29T00:00:00Z')).body.data.next;
    expect(berlin).toEqual(['2026-03-29T00:30:00.000Z', '2026-03-29T01:00:00.000Z']);
    const berlinAutumn = (await tenant.api.get('/environments/prod/schedules/nightly_berlin/next?count=2&after=2026-10-24T23:00:00Z')).body.data.next;
    expect(berlinAutumn).toEqual(['2026-10-24T23:30:00.000Z', '2026-10-25T00:30:00.000Z']);
  });

  it("fires by the same rule in Temporal itself: its matching times, less the ticks the engine drops, are next year's table", async () => {
    // Temporal puts a repeated wall time at Go's choice of occurrence (the second in Berlin,
    // the first in New York) and repeats an hour's matches across the repeated hour; the
    // product adds one-offs to its spec and drops the extra ticks.
    const DST = [
      { name: 'at_0230_berlin', job: 'quick', cron: '30 2 * * *', timezone: 'Europe/Berlin', hours: [2] },
      { name: 'at_0130_berlin', job: 'quick', cron: '30 1 * * *', timezone: 'Europe/Berlin', hours: [1] },
      { name: 'at_0130_new_york', job: 'quick', cron: '30 1 * * *', timezone: 'America/New_York', hours: [1] },
      { name: 'at_0230_new_york', job: 'quick', cron: '30 2 * * *', timezone: 'America/New_York', hours: [2] },
      { ...NIGHTLY_BERLIN, hours: [1, 2] },
      { ...NIGHTLY_NEW_YORK, hours: [1, 2] },
    ];
    const bundleRef = (await tenant.api.get(`/deployments/${firstDeploymentId}`)).body.data.bundle_ref as string;
    expect((await tenant.api.post('/environments', { name: 'dst', storage_prefix: `file://${join(stack.dataDir, 'lake', 'unused')}`, executor: 'local' })).status).toBe(201);
    expect((await tenant.api.post('/environments/dst/schedules/pause', {})).status).toBe(200);
    for (const binding of ['warehouse', 'gate']) expect((await tenant.api.put(`/environments/dst/bindings/${binding}`, {})).status).toBe(201);
    const schedules = DST.map(({ hours: _hours, ...definition }) => definition);
    const deployed = await tenant.api.post('/environments/dst/deployments', { manifest: manifestWith(schedules), bundle_ref: bundleRef });
    expect(deployed.status, deployed.text).toBe(201);
    const dst = Environment.parse((await tenant.api.get('/environments/dst')).body.data);

    const year = new Date().getUTCFullYear() + 1;
    const matchingTimes = async (scheduleId: string) => {
      const { startTime } = await temporal.workflowService.listScheduleMatchingTimes({
        namespace: 'default',
        scheduleId,
        startTime: msToTs(Date.parse(`${year}-01-01T00:00:00Z`) - 1000),
        endTime: msToTs(Date.parse(`${year + 1}-01-01T00:00:00Z`) - 1000),
      });
      return (startTime ?? []).map((time) => tsToMs(time));
    };
    const iso = (instants: number[]) => instants.map((instant) => new Date(instant).toISOString());
    for (const schedule of DST) {
      const cron = parseCronExpression(schedule.cron) as ParsedCron;
      const expected = expectedFireTable(schedule.timezone, schedule.hours, year);
      const matching = await matchingTimes(`sched-${dst.id}-${schedule.name}`);
      expect(iso(matching.filter((instant) => !isDroppedTick(cron, schedule.timezone, instant))), schedule.name).toEqual(expected);

      // The control: the bare cron in Temporal, without the engine's one-offs and drops,
      // departs from the table for each of these schedules (a spring gap skipped, a repeated
      // time at its second occurrence or at both, an hour's match carried into the repeat).
      const bareId = `bare-${dst.id}-${schedule.name}`;
      const bare = await temporal.schedule.create({
        scheduleId: bareId,
        spec: { cronExpressions: [schedule.cron], timezone: schedule.timezone },
        action: { type: 'startWorkflow', workflowType: 'neverRun', taskQueue: 'no-such-queue', args: [] },
        state: { paused: true },
      });
      try {
        expect(iso(await matchingTimes(bareId)), schedule.name).not.toEqual(expected);
      } finally {
        await bare.delete();
      }
    }

    // The drop at work: New York's repeated 01:30 of 2026, backfilled (both occurrences
    // ticked by Temporal), starts one run, for the first; the second tick starts nothing.
    expect((await tenant.api.post('/environments/dst/schedules/resume', {})).status).toBe(200);
    const scheduleId = `sched-${dst.id}-at_0130_new_york`;
    await temporal.schedule.getHandle(scheduleId).backfill({
      start: new Date('2026-11-01T05:00:00Z'),
      end: new Date('2026-11-01T07:00:00Z'),
      overlap: ScheduleOverlapPolicy.ALLOW_ALL,
    });
    const listTicks = async () => {
      const closed = [];
      for await (const execution of temporal.workflow.list({ query: `TemporalScheduledById = '${scheduleId}' AND ExecutionStatus = 'Completed'` })) closed.push(execution);
      return closed;
    };
    const ticks = await until(listTicks, (closed) => closed.length >= 2, 30_000);
    expect(ticks).toHaveLength(2);
    const outcomes = await Promise.all(ticks.map(async (tick) => (await temporal.workflow.getHandle(tick.workflowId, tick.runId).result()) as { outcome: string }));
    expect(outcomes.map((outcome) => outcome.outcome).sort()).toEqual(['not_a_fire_time', 'started']);
    const dstRuns = RunList.parse((await tenant.api.get('/environments/dst/runs')).body).data.filter((run) => run.schedule === 'at_0130_new_york');
    expect(dstRuns).toHaveLength(1);
    expect((await tenant.api.post('/environments/dst/schedules/pause', {})).status).toBe(200);
  });

  it('pause stops the ticks, a manual run still starts, and resume fires no catch-up burst', async () => {
    const paused = await tenant.api.post('/environments/prod/schedules/pause', { reason: 'maintenance' });
    expect(paused.status).toBe(200);
    expect(paused.body.data).toMatchObject({ schedules_paused: true, schedules_paused_reason: 'maintenance' });
    const pausedAt = Date.now();
    for (const schedule of await listSchedules()) expect(schedule).toMatchObject({ paused: true, next_run_at: null });
    expect(await temporalState('every_second')).toBe('paused');

    // Manual runs are the clock: they start while paused, at least one, and they go on until
    // several periods have passed (however slowly the steps above went).
    let manualRuns = 0;
    do {
      const manual = await tenant.api.post('/environments/prod/runs', { job: 'quick' });
      expect(manual.status).toBe(201);
      expect((await waitForRun(tenant, manual.body.data.id)).status).toBe('succeeded');
      manualRuns += 1;
    } while (Date.now() - pausedAt < 4000);
    expect(manualRuns).toBeGreaterThan(0);
    const duringPause = (await scheduledRuns()).filter((run) => Date.parse(run.inserted_at) > pausedAt);
    expect(duringPause).toEqual([]);

    const resumeAskedAt = Date.now();
    const resumed = await tenant.api.post('/environments/prod/schedules/resume');
    expect(resumed.status).toBe(200);
    expect(resumed.body.data).toMatchObject({ schedules_paused: false, schedules_paused_reason: null });
    // Evidence that the schedule fires again: runs of two ticks after the resume.
    await until(() => scheduledTicks(), (runs) => runs.filter((run) => run.tick >= resumeAskedAt).length >= 2, 30_000, 200);
    // No catch-up: no run of a tick that fell while paused (the four-plus ticks missed then
    // are not made up for; the second before the resume is its rounding).
    const madeUp = (await scheduledTicks()).filter((run) => run.tick > pausedAt && run.tick < resumeAskedAt - 1000);
    expect(madeUp.map((run) => new Date(run.tick).toISOString())).toEqual([]);
  });

  it("admits no tick once the pause has returned, not even one whose run's transaction was under way", async () => {
    // A tick as the scheduled-run workflow sends it, straight to the placement-service. It
    // reads the flag (not paused), then its run's transaction is held back by the test's own
    // uncommitted run of the same tick while the pause lands; released, it must start nothing.
    const placement = new PlacementClient({ origins: [stack.urls['placement-service']], credential: stack.internalCredential });
    const bundleRef = (await tenant.api.get(`/deployments/${firstDeploymentId}`)).body.data.bundle_ref as string;
    expect((await tenant.api.post('/environments', { name: 'fence', storage_prefix: `file://${join(stack.dataDir, 'lake', tenant.tenantId, 'fence')}`, executor: 'local' })).status).toBe(201);
    for (const binding of ['warehouse', 'gate']) expect((await tenant.api.put(`/environments/fence/bindings/${binding}`, {})).status).toBe(201);
    expect((await tenant.api.post('/environments/fence/deployments', { manifest: manifestWith([]), bundle_ref: bundleRef })).status).toBe(201);
    const fenceId = Environment.parse((await tenant.api.get('/environments/fence')).body.data).id;
    const mongo = await new MongoClient(stack.mongoUrl).connect();
    const runs = mongo.db(stack.databases['placement-service']).collection<{ _id: string; tenant_id: string; environment_id: string; schedule: string; schedule_tick: string }>('runs');
    const abortedTransactions = async () => (await mongo.db('admin').command({ serverStatus: 1 }))['transactions']['totalAborted'] as number;
    const session = mongo.startSession();
    try {
      const tick = { schedule: 'held', job: 'quick', tick: '2026-11-25T12:00:00' };
      // Control: the same tick on a free path starts its run.
      const free = await placement.startScheduledRun(tenant.tenantId, 'fence', { ...tick, schedule: 'free' });
      expect(free.outcome).toBe('started');

      session.startTransaction();
      await runs.insertOne(
        { _id: 'run_held_by_test', tenant_id: tenant.tenantId, environment_id: fenceId, schedule: tick.schedule, schedule_tick: tick.tick },
        { session },
      );
      const abortedBefore = await abortedTransactions();
      const outcome = placement.startScheduledRun(tenant.tenantId, 'fence', tick);
      // Evidence that the tick is in its transaction, past the flag's first reading: its
      // transaction is aborted by the conflict, and retried, over and over.
      await until(async () => (await abortedTransactions()) - abortedBefore, (aborted) => aborted >= 3, 30_000, 5);
      expect((await tenant.api.post('/environments/fence/schedules/pause', {})).status).toBe(200);
      await session.abortTransaction();

      expect(await outcome).toEqual({ outcome: 'paused', run_id: null });
      expect(await runs.countDocuments({ tenant_id: tenant.tenantId, environment_id: fenceId, schedule: tick.schedule })).toBe(0);
    } finally {
      await session.endSession();
      await mongo.close();
    }
  });

  it('keeps the pause through a new deployment and a rollback, and the schedules follow the deployment', async () => {
    expect((await tenant.api.post('/environments/prod/schedules/pause', {})).status).toBe(200);
    const secondId = await deploy([{ name: 'hourly', job: 'quick', cron: '0 * * * *', timezone: 'UTC' }]);
    expect((await tenant.api.get('/environments/prod')).body.data).toMatchObject({ active_deployment_id: secondId, schedules_paused: true });
    expect((await listSchedules()).map((schedule) => [schedule.name, schedule.paused])).toEqual([['hourly', true]]);
    expect(await temporalState('hourly')).toBe('paused');
    expect(await temporalState('every_second')).toBe('missing');

    const rollback = await tenant.api.post(`/deployments/${firstDeploymentId}/activate`, {});
    expect(rollback.status, rollback.text).toBe(200);
    expect((await tenant.api.get('/environments/prod')).body.data).toMatchObject({ active_deployment_id: firstDeploymentId, schedules_paused: true });
    expect((await listSchedules()).map((schedule) => schedule.name).sort()).toEqual(['every_second', 'nightly_berlin', 'nightly_ny']);
    for (const name of ['every_second', 'nightly_berlin', 'nightly_ny']) expect(await temporalState(name)).toBe('paused');
    expect(await temporalState('hourly')).toBe('missing');
  });

  it('skips a tick while the previous scheduled run is still going, and counts it', async () => {
    await deploy([{ name: 'slow_every_second', job: 'slow', cron: '* * * * * *', timezone: 'UTC' }]);
    expect((await tenant.api.post('/environments/prod/schedules/resume', {})).status).toBe(200);
    const listed = await until(
      () => listSchedules(),
      (schedules) => (schedules.find((schedule) => schedule.name === 'slow_every_second')?.skipped_overlap ?? 0) >= 2,
      60_000,
      250,
    );
    expect(listed[0]).toMatchObject({ name: 'slow_every_second', paused: false });
    expect((await tenant.api.post('/environments/prod/schedules/pause', {})).status).toBe(200);
    const runs = await scheduledRuns('slow_every_second');
    const ended = await Promise.all(runs.map((run) => waitForRun(tenant, run.id)));
    // Oldest first: each run started after the one before it ended.
    const ordered = ended.sort((a, b) => Date.parse(a.inserted_at) - Date.parse(b.inserted_at));
    for (let index = 1; index < ordered.length; index += 1) {
      expect(Date.parse(ordered[index]!.inserted_at)).toBeGreaterThanOrEqual(Date.parse(ordered[index - 1]!.finished_at!));
    }
  });

  it('refuses bad input and another tenant, changing nothing', async () => {
    for (const query of ['count=0', 'count=1001', 'count=two', 'after=yesterday', 'limit=3']) {
      const response = await tenant.api.get(`/environments/prod/schedules/nightly_ny/next?${query}`);
      expect(response.status, query).toBe(422);
      expect(response.body.error.code).toBe('invalid_request');
    }
    const unknown = await tenant.api.get('/environments/prod/schedules/no_such/next');
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'not_found']);
    const missingEnvironment = await tenant.api.get('/environments/nowhere/schedules');
    expect([missingEnvironment.status, missingEnvironment.body.error.code]).toEqual([404, 'not_found']);

    const before = (await tenant.api.get('/environments/prod')).body.data;
    for (const [method, path] of [
      ['GET', '/environments/prod/schedules'],
      ['GET', '/environments/prod/schedules/slow_every_second/next'],
      ['POST', '/environments/prod/schedules/pause'],
      ['POST', '/environments/prod/schedules/resume'],
    ] as const) {
      const response = await other.api.request(method, path, method === 'POST' ? { json: {} } : {});
      expect([response.status, response.body.error.code], path).toEqual([404, 'not_found']);
    }
    expect((await tenant.api.get('/environments/prod')).body.data).toEqual(before);
  });

  it('starts the schedules of a preview environment paused until it is resumed', async () => {
    const created = await tenant.api.post('/environments', { name: 'preview-1', kind: 'preview', storage_prefix: `file://${join(stack.dataDir, 'lake', 'preview-1')}`, executor: 'local' });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ kind: 'preview', schedules_paused: true });
    expect(created.body.data.schedules_paused_reason).toMatch(/preview/);
    const resumed = await tenant.api.post('/environments/preview-1/schedules/resume', {});
    expect(resumed.body.data).toMatchObject({ schedules_paused: false, schedules_paused_reason: null });
  });
});
