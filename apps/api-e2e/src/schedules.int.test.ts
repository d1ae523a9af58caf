import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { dataEnvelope, Environment, Run, Schedule, ScheduleNextFireTimes } from '@envengine/contracts';
import { parseCronExpression, planTick, tickKeyOf, type ParsedCron } from '@envengine/schedule-timing';
import { PlacementClient } from '@envengine/service-clients';
import { createTenant, deployProject, until, type TestTenant } from '@envengine/test-harness';
import { ASSET_CODE, runsManifest, waitForRun } from './runs-fixtures.ts';
import { insertDueSchedules, storedSchedulesOf } from './schedule-fixtures.ts';

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
  /** The environment's stored schedules (what the tick loop ticks), by name. */
  const stored = async () => {
    const mongo = await new MongoClient(stack.mongoUrl).connect();
    try {
      return await storedSchedulesOf(mongo, stack.databases['placement-service'], environment.id);
    } finally {
      await mongo.close();
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
      storagePrefix: `file://${join(stack.dataDir, 'lake', tenant.tenantId, 'prod')}`,
      executor: 'local',
      bindings: { warehouse: {}, gate: { config: { open: false } } },
      files: FILES,
      manifest: manifestWith([EVERY_SECOND, NIGHTLY_NEW_YORK, NIGHTLY_BERLIN]),
    });
    environment = Environment.parse((await tenant.api.get('/environments/prod')).body.data);
    firstDeploymentId = environment.active_deployment_id!;
  });

  afterAll(async () => {
    // Nothing keeps firing into the tests that follow.
    await tenant?.api.post('/environments/prod/schedules/pause', {});
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
    // Each tick is recorded with what came of it; none was let pass.
    expect(everySecond.last_tick).not.toBeNull();
    expect(['run_created', 'skipped_overlap']).toContain(everySecond.last_tick!.outcome);
    expect(everySecond.ticks.run_created).toBeGreaterThanOrEqual(2);
    expect(everySecond.ticks.missed).toBe(0);
    expect((await stored()).get('every_second')?.ticks['run_created']).toBeGreaterThanOrEqual(2);
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

  it("ticks by the same rule: the tick path's fire times over next year are the independent table, and each stored next fire time is the preview's first", async () => {
    const year = new Date().getUTCFullYear() + 1;
    for (const schedule of [NIGHTLY_NEW_YORK, NIGHTLY_BERLIN]) {
      // The loop's own step: wake at the stored time, plan the tick, store the next one.
      const cron = parseCronExpression(schedule.cron) as ParsedCron;
      const ticked: string[] = [];
      let due: number | null = Date.parse(`${year}-01-01T00:00:00Z`);
      due = planTick(cron, schedule.timezone, due, due).nextFireAt;
      while (due !== null && due < Date.parse(`${year + 1}-01-01T00:00:00Z`)) {
        const plan = planTick(cron, schedule.timezone, due, due);
        ticked.push(new Date(plan.fireAt).toISOString());
        due = plan.nextFireAt;
      }
      expect(ticked, schedule.name).toEqual(expectedFireTable(schedule.timezone, [1, 2], year));
    }
    const schedules = await listSchedules();
    const mongo = await new MongoClient(stack.mongoUrl).connect();
    try {
      const stored = await storedSchedulesOf(mongo, stack.databases['placement-service'], environment.id);
      for (const schedule of [NIGHTLY_NEW_YORK, NIGHTLY_BERLIN]) {
        const preview = ScheduleNextFireTimes.parse((await tenant.api.get(`/environments/prod/schedules/${schedule.name}/next?count=1`)).body.data);
        expect(stored.get(schedule.name)?.next_fire_at?.toISOString(), schedule.name).toBe(preview.next[0]);
        expect(schedules.find((listed) => listed.name === schedule.name)?.next_run_at).toBe(preview.next[0]);
      }
    } finally {
      await mongo.close();
    }
  });

  it('pause stops the ticks, a manual run still starts, and resume fires no catch-up burst', async () => {
    const paused = await tenant.api.post('/environments/prod/schedules/pause', { reason: 'maintenance' });
    expect(paused.status).toBe(200);
    expect(paused.body.data).toMatchObject({ schedules_paused: true, schedules_paused_reason: 'maintenance' });
    const pausedAt = Date.now();
    for (const schedule of await listSchedules()) expect(schedule).toMatchObject({ paused: true, next_run_at: null });
    const skippedBefore = (await listSchedules()).find((schedule) => schedule.name === 'every_second')!.ticks.skipped_paused;

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
    // The ticks while paused were not let pass in silence: each is recorded skipped_paused.
    const whilePaused = (await listSchedules()).find((schedule) => schedule.name === 'every_second')!;
    expect(whilePaused.ticks.skipped_paused).toBeGreaterThan(skippedBefore);
    expect(whilePaused.last_tick).toMatchObject({ outcome: 'skipped_paused', run_id: null });

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
    // A due schedule, ticked by a pass of its shard (the loop's, or the test's own call). The
    // pass reads the flag (not paused), then its run's transaction is held back by the test's
    // own uncommitted run of the same tick while the pause lands; released, it starts nothing.
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
    const database = stack.databases['placement-service'];
    // A whole second in the past, so that its tick's key is known: the daily cron's next time is a day on.
    const dueAt = new Date(Math.floor(Date.now() / 1000) * 1000 - 2000);
    const due = (name: string) => insertDueSchedules(mongo, database, { tenantId: tenant.tenantId, environmentId: fenceId, names: [name], job: 'quick', cron: `${dueAt.getUTCSeconds()} ${dueAt.getUTCMinutes()} ${dueAt.getUTCHours()} * * *`, dueAt });
    try {
      // Control: a tick on a free path makes its run.
      await due('free');
      await placement.tickSchedules(0);
      expect((await storedSchedulesOf(mongo, database, fenceId)).get('free')?.last_tick).toMatchObject({ outcome: 'run_created' });
      expect(await runs.countDocuments({ tenant_id: tenant.tenantId, environment_id: fenceId, schedule: 'free' })).toBe(1);

      session.startTransaction();
      await runs.insertOne(
        { _id: 'run_held_by_test', tenant_id: tenant.tenantId, environment_id: fenceId, schedule: 'held', schedule_tick: tickKeyOf(dueAt.getTime(), 'UTC') },
        { session },
      );
      const abortedBefore = await abortedTransactions();
      await due('held');
      const pass = placement.tickSchedules(0);
      // Evidence that the tick is in its transaction, past the flag's first reading: its
      // transaction is aborted by the conflict, and retried, over and over.
      await until(async () => (await abortedTransactions()) - abortedBefore, (aborted) => aborted >= 3, 30_000, 5);
      expect((await tenant.api.post('/environments/fence/schedules/pause', {})).status).toBe(200);
      await session.abortTransaction();

      await pass;
      const held = (await storedSchedulesOf(mongo, database, fenceId)).get('held')!;
      expect(held.last_tick).toMatchObject({ outcome: 'skipped_paused', run_id: null });
      expect(held.ticks).toEqual({ skipped_paused: 1 });
      expect(await runs.countDocuments({ tenant_id: tenant.tenantId, environment_id: fenceId, schedule: 'held' })).toBe(0);
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
    expect([...(await stored()).keys()]).toEqual(['hourly']);

    const rollback = await tenant.api.post(`/deployments/${firstDeploymentId}/activate`, {});
    expect(rollback.status, rollback.text).toBe(200);
    expect((await tenant.api.get('/environments/prod')).body.data).toMatchObject({ active_deployment_id: firstDeploymentId, schedules_paused: true });
    expect((await listSchedules()).map((schedule) => schedule.name).sort()).toEqual(['every_second', 'nightly_berlin', 'nightly_ny']);
    expect([...(await stored()).keys()].sort()).toEqual(['every_second', 'nightly_berlin', 'nightly_ny']);
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

  it('changes nothing on a resume of schedules that are not paused: a tick already due keeps its time', async () => {
    expect((await tenant.api.post('/environments/prod/schedules/resume', {})).status).toBe(200);
    const [name] = [...(await stored()).keys()];
    // A fire time no resume would choose: only a resume that re-anchors the schedules moves it.
    const marked = new Date('2099-01-01T00:00:00.000Z');
    const mongo = await new MongoClient(stack.mongoUrl).connect();
    try {
      await mongo.db(stack.databases['placement-service']).collection('schedules').updateOne({ environment_id: environment.id, name }, { $set: { next_fire_at: marked } });
    } finally {
      await mongo.close();
    }
    const again = await tenant.api.post('/environments/prod/schedules/resume', {});
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ schedules_paused: false });
    expect((await stored()).get(name!)?.next_fire_at?.toISOString()).toBe(marked.toISOString());
    expect((await tenant.api.post('/environments/prod/schedules/pause', {})).status).toBe(200);
  });
});
