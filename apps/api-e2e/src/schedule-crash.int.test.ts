import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Environment, SCHEDULES_CHANGED_SIGNAL, scheduleTicksWorkflowId } from '@envengine/contracts';
import { superviseStack, type ServiceName, type Supervisor } from '@envengine/dev-stack';
import { tickKeyOf } from '@envengine/schedule-timing';
import { PlacementClient } from '@envengine/service-clients';
import { createTenant, makeBundle, manifestOf, startTestStack, until, type TestStack, type TestTenant } from '@envengine/test-harness';
import { RUN_TEST_SETTINGS } from './runs-fixtures.ts';
import { insertDueSchedules, storedSchedulesOf } from './schedule-fixtures.ts';
import { restartHolds } from './supervision-fixtures.ts';

const shared = inject('stack');

/** Stored schedules per tenant in the crash tests: one tenant's part of the batch commits, the other's is held. */
const PER_TENANT = 50;
/** The downtime test's schedules fire every 5 s. */
const EVERY_5_SECONDS = '*/5 * * * * *';
const FIVE_SECONDS = 5_000;

type RunRow = { _id: string; tenant_id: string; environment_id: string; schedule: string; schedule_tick: string };

describe('ticks across a crash and a downtime (a stack of its own, supervised)', () => {
  let stack: TestStack;
  let supervisor: Supervisor;
  let mongo: MongoClient;
  let temporal: Connection;
  const tenants: TestTenant[] = [];
  const environmentIds: string[] = [];
  let bundleRef = '';
  const reported: string[] = [];
  const holds = restartHolds();

  beforeAll(async () => {
    // Its own Redis: the local attempt queue has one name, so the shared stack's runner would take this stack's attempts.
    stack = await startTestStack({ mongoUrl: shared.mongoUrl, temporalAddress: shared.temporalAddress, env: RUN_TEST_SETTINGS });
    supervisor = superviseStack(stack, { report: (line) => reported.push(line), beforeRestart: holds.beforeRestart });
    mongo = await new MongoClient(stack.info.mongoUrl).connect();
    temporal = await Connection.connect({ address: stack.info.temporalAddress });
    for (const name of ['crash-a', 'crash-b']) {
      const tenant = await createTenant(stack.info, name);
      tenants.push(tenant);
      const bundle = await tenant.api.request('POST', '/bundles', { raw: await makeBundle({ 'assets/noop.js': 'export default async () => {};' }), headers: { 'content-type': 'application/gzip' } });
      bundleRef = bundle.body.data.bundle_ref as string;
      // Remote with no worker: each run stays queued, made once and never run.
      expect((await tenant.api.post('/environments', { name: 'ticked', storage_prefix: `file://${join(stack.info.dataDir, 'lake', tenant.tenantId, 'ticked')}`, executor: 'remote' })).status).toBe(201);
      expect((await tenant.api.put('/environments/ticked/bindings/lake', {})).status).toBe(201);
      const deployed = await tenant.api.post('/environments/ticked/deployments', { manifest: { ...manifestOf([{ key: 'noop' }], 'lake'), schedules: [] }, bundle_ref: bundleRef });
      expect(deployed.status, deployed.text).toBe(201);
      environmentIds.push(Environment.parse((await tenant.api.get('/environments/ticked')).body.data).id);
    }
  });

  afterAll(async () => {
    await supervisor?.stop();
    await temporal?.close();
    await mongo?.close();
    await stack?.stop();
  });

  // A client of its own per call: one that saw the service die keeps it out of rotation for a while.
  const placement = () => new PlacementClient({ origins: [stack.info.urls['placement-service']], credential: stack.info.internalCredential });
  const database = () => stack.info.databases['placement-service'];
  const runs = () => mongo.db(database()).collection<RunRow>('runs');
  const abortedTransactions = async () => (await mongo.db('admin').command({ serverStatus: 1 }))['transactions']['totalAborted'] as number;

  async function reportedLine(pattern: RegExp): Promise<string> {
    const line = await until(async () => reported.find((entry) => pattern.test(entry)), (found) => found !== undefined, 60_000, 20);
    if (line === undefined) throw new Error(`the supervisor never reported ${pattern}; it reported:\n${reported.join('\n')}`);
    return line;
  }

  /** SIGKILLs the service (its restart held) and waits until the supervisor saw it die. */
  async function kill(name: ServiceName): Promise<void> {
    holds.hold(name);
    const pid = stack.services.processes[name].pid!;
    process.kill(pid, 'SIGKILL');
    await reportedLine(new RegExp(`^${name} \\(pid ${pid}\\) exited unexpectedly with signal SIGKILL`));
  }

  /** Lets the service's restart go and waits until the supervisor reports it back. */
  async function restart(name: ServiceName): Promise<void> {
    const before = reported.filter((line) => line.startsWith(`${name} is back`)).length;
    holds.release(name);
    await until(async () => reported.filter((line) => line.startsWith(`${name} is back`)).length, (count) => count > before, 60_000, 20);
    expect(reported.filter((line) => line.startsWith(`${name} is back`)).length).toBe(before + 1);
  }

  /**
   * `PER_TENANT` schedules per tenant due now (a daily cron at a second just past, so each
   * has exactly one tick to make), and a transaction of the test's own holding back tenant
   * B's part of the batch: it inserts B's first tick's run, uncommitted, so B's transaction
   * conflicts and is run again until the test lets go. Answers what the checks need.
   */
  async function dueSchedulesWithTenantBHeld(prefix: string) {
    const dueAt = new Date(Math.floor(Date.now() / 1000) * 1000 - 2000);
    const cron = `${dueAt.getUTCSeconds()} ${dueAt.getUTCMinutes()} ${dueAt.getUTCHours()} * * *`;
    const names = Array.from({ length: PER_TENANT }, (_, index) => `${prefix}${index}`);
    for (const [index, tenant] of tenants.entries()) {
      await insertDueSchedules(mongo, database(), { tenantId: tenant.tenantId, environmentId: environmentIds[index]!, names, job: 'all', cron, dueAt });
    }
    const tick = tickKeyOf(dueAt.getTime(), 'UTC');
    const session = mongo.startSession();
    session.startTransaction();
    await runs().insertOne({ _id: `run_held_${prefix}`, tenant_id: tenants[1]!.tenantId, environment_id: environmentIds[1]!, schedule: names[0]!, schedule_tick: tick }, { session });
    return { names, tick, session };
  }

  /** Evidence that a pass is in the middle of its batch: A's part committed, B's retried over and over. */
  async function midBatch(names: string[], tick: string, abortedBefore: number): Promise<void> {
    const madeForA = await until(() => runs().countDocuments({ tenant_id: tenants[0]!.tenantId, schedule: { $in: names }, schedule_tick: tick }), (count) => count === PER_TENANT, 60_000, 10);
    expect(madeForA).toBe(PER_TENANT);
    const aborted = await until(async () => (await abortedTransactions()) - abortedBefore, (count) => count >= 3, 60_000, 5);
    expect(aborted).toBeGreaterThanOrEqual(3);
    expect(await runs().countDocuments({ tenant_id: tenants[1]!.tenantId, schedule: { $in: names }, schedule_tick: tick })).toBe(0);
  }

  /** How many of these schedules of the tenant (by index) have a tick recorded. */
  const recordedFor = async (tenant: number, names: string[]) =>
    [...(await storedSchedulesOf(mongo, database(), environmentIds[tenant]!))].filter(([name, doc]) => names.includes(name) && doc.last_tick !== null).length;

  /** Every schedule of both tenants has exactly one run for the tick, its last tick records that run, counted once. */
  async function exactlyOneRunEach(names: string[], tick: string): Promise<void> {
    for (const [index, tenant] of tenants.entries()) {
      const made = await runs().aggregate<{ _id: string; count: number; ids: string[] }>([
        { $match: { tenant_id: tenant.tenantId, schedule: { $in: names }, schedule_tick: tick } },
        { $group: { _id: '$schedule', count: { $sum: 1 }, ids: { $push: '$_id' } } },
      ]).toArray();
      expect(made.map((group) => group._id).sort()).toEqual([...names].sort());
      expect(made.filter((group) => group.count !== 1)).toEqual([]);
      const stored = await storedSchedulesOf(mongo, database(), environmentIds[index]!);
      for (const group of made) {
        const schedule = stored.get(group._id)!;
        expect(schedule.last_tick?.run_id).toBe(group.ids[0]);
        expect((schedule.ticks['run_created'] ?? 0) + (schedule.ticks['late'] ?? 0)).toBe(1);
      }
    }
  }

  it('makes each due tick exactly one run when the placement-service is killed in the middle of a batch', async () => {
    const abortedBefore = await abortedTransactions();
    const { names, tick, session } = await dueSchedulesWithTenantBHeld('p');
    try {
      // A pass of shard 0 (where the fixtures put the schedules), made here so that it is known to be under way.
      const pass = placement().tickSchedules(0).catch(() => undefined);
      await midBatch(names, tick, abortedBefore);
      await kill('placement-service');
      await pass;
    } finally {
      await session.abortTransaction();
      await session.endSession();
    }
    await restart('placement-service');
    // The loop ticks B's part again once the transaction the killed process left open is
    // ended (by the next conflicting part after ~5 s, or by MongoDB's own limit of 60 s).
    expect(await until(() => recordedFor(1, names), (count) => count === PER_TENANT, 120_000, 100)).toBe(PER_TENANT);
    // Another pass (a retried activity) makes nothing twice.
    await placement().tickSchedules(0);
    await exactlyOneRunEach(names, tick);
  }, 240_000);

  it('makes each due tick exactly one run when the workflow-worker is killed while its pass is in the middle of a batch, and the pass is made again', async () => {
    const abortedBefore = await abortedTransactions();
    const { names, tick, session } = await dueSchedulesWithTenantBHeld('w');
    let retried: Promise<unknown> = Promise.resolve();
    try {
      // The loop's own pass: woken by a change, its activity (in the workflow-worker) asks the placement-service for it.
      await new Client({ connection: temporal }).workflow.getHandle(scheduleTicksWorkflowId(0, stack.services.deploymentsTaskQueue)).signal(SCHEDULES_CHANGED_SIGNAL);
      await midBatch(names, tick, abortedBefore);
      await kill('workflow-worker');
      // The activity's retry, while the dead worker's pass still goes on in the placement-service (made here at once rather than after the activity's timeout).
      retried = placement().tickSchedules(0);
      const abortedSince = await abortedTransactions();
      await until(async () => (await abortedTransactions()) - abortedSince, (count) => count >= 3, 60_000, 5);
    } finally {
      await session.abortTransaction();
      await session.endSession();
    }
    await retried;
    expect(await until(() => recordedFor(1, names), (count) => count === PER_TENANT, 60_000, 50)).toBe(PER_TENANT);
    await restart('workflow-worker');
    await exactlyOneRunEach(names, tick);
  }, 180_000);

  it('fires one catch-up run per schedule after the engine was down across three fire times, and records the rest missed', async () => {
    const tenant = tenants[0]!;
    expect((await tenant.api.post('/environments', { name: 'downtime', storage_prefix: `file://${join(stack.info.dataDir, 'lake', tenant.tenantId, 'downtime')}`, executor: 'local' })).status).toBe(201);
    expect((await tenant.api.put('/environments/downtime/bindings/lake', {})).status).toBe(201);
    const schedules = ['d0', 'd1', 'd2'].map((name) => ({ name, job: 'all', cron: EVERY_5_SECONDS, timezone: 'UTC' }));
    const deployed = await tenant.api.post('/environments/downtime/deployments', { manifest: { ...manifestOf([{ key: 'noop' }], 'lake'), schedules }, bundle_ref: bundleRef });
    expect(deployed.status, deployed.text).toBe(201);
    const environmentId = Environment.parse((await tenant.api.get('/environments/downtime')).body.data).id;
    const storedNow = () => storedSchedulesOf(mongo, database(), environmentId);
    // Evidence the loop ticks them: each has made a run.
    const ticking = await until(async () => [...(await storedNow()).values()].filter((doc) => (doc.ticks['run_created'] ?? 0) >= 1).length, (count) => count === 3, 60_000, 100);
    expect(ticking).toBe(3);

    // A quiet moment: every run made so far has ended (the next tick is seconds away), so no run is left to overlap the catch-up.
    const unfinished = () => runs().countDocuments({ environment_id: environmentId, status: { $in: ['queued', 'running'] } } as never);
    expect(await until(unfinished, (count) => count === 0, 60_000, 20)).toBe(0);
    // The engine's two ticking processes die; nothing records a tick while they are down.
    await kill('workflow-worker');
    await kill('placement-service');
    const before = await storedNow();
    const firstMissed = new Map([...before].map(([name, doc]) => [name, doc.next_fire_at!.getTime()]));
    // Down across three fire times of every schedule (the clock passing them is the evidence).
    const downUntil = Math.max(...firstMissed.values()) + 2 * FIVE_SECONDS + 500;
    await until(async () => Date.now(), (now) => now > downUntil, 60_000, 100);
    await restart('placement-service');
    await restart('workflow-worker');
    const backAt = Date.now();

    // The first tick each records after the restart (caught before the next one, 5 s on, replaces it).
    const catchUps = new Map<string, { fire_at: Date; outcome: string; run_id: string | null; missed: number; recorded_at: Date }>();
    await until(
      async () => {
        for (const [name, doc] of await storedNow()) {
          if (!catchUps.has(name) && doc.last_tick !== null && doc.last_tick.fire_at.getTime() >= firstMissed.get(name)!) catchUps.set(name, doc.last_tick);
        }
        return catchUps.size;
      },
      (count) => count === 3,
      120_000,
      50,
    );
    expect(catchUps.size).toBe(3);
    console.info(`schedule downtime: down ${((backAt - Math.min(...firstMissed.values())) / 1000).toFixed(1)} s from the first missed fire time; catch-up ticks recorded ${[...catchUps.values()].map((tick) => ((tick.recorded_at.getTime() - backAt) / 1000).toFixed(1)).join(', ')} s after the engine was back`);
    expect((await tenant.api.post('/environments/downtime/schedules/pause', {})).status).toBe(200);

    for (const [name, catchUp] of catchUps) {
      const missedFrom = firstMissed.get(name)!;
      // The latest fire time at the restart fires, once; every one before it since the crash is counted missed.
      const missed = (catchUp.fire_at.getTime() - missedFrom) / FIVE_SECONDS;
      expect(missed).toBeGreaterThanOrEqual(2);
      expect(catchUp.missed).toBe(missed);
      expect(catchUp.outcome).toBe('run_created');
      const made = await runs().find({ environment_id: environmentId, schedule: name, schedule_tick: { $gte: tickKeyOf(missedFrom, 'UTC'), $lte: tickKeyOf(catchUp.fire_at.getTime(), 'UTC') } }).toArray();
      expect(made.map((run) => [run._id, run.schedule_tick])).toEqual([[catchUp.run_id, tickKeyOf(catchUp.fire_at.getTime(), 'UTC')]]);
      const stored = (await storedNow()).get(name)!;
      expect((stored.ticks['missed'] ?? 0) - (before.get(name)!.ticks['missed'] ?? 0)).toBe(missed);
    }
  }, 240_000);
});
