import { join } from 'node:path';
import { Client, Connection, ScheduleNotFoundError } from '@temporalio/client';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Environment, ScheduledRunInput } from '@envengine/contracts';
import { createTenant, deployProject, manifestOf, startTestStack, until, type TestStack } from '@envengine/test-harness';
import { storedSchedulesOf } from './schedule-fixtures.ts';

const shared = inject('stack');

describe('a data directory with Temporal Schedules of the first design (a stack of its own)', () => {
  let stack: TestStack;
  let mongo: MongoClient;
  let temporalConnection: Connection;
  let temporal: Client;

  beforeAll(async () => {
    stack = await startTestStack({ mongoUrl: shared.mongoUrl, temporalAddress: shared.temporalAddress, replicas: 1 });
    mongo = await new MongoClient(stack.info.mongoUrl).connect();
    temporalConnection = await Connection.connect({ address: shared.temporalAddress });
    temporal = new Client({ connection: temporalConnection });
  });

  afterAll(async () => {
    await temporalConnection?.close();
    await mongo?.close();
    await stack?.stop();
  });

  it('stores the schedules of their environments at the start, keeps the pause, and deletes the Temporal Schedules', async () => {
    const tenant = await createTenant(stack.info, 'migration');
    const manifest = { ...manifestOf([{ key: 'noop' }], 'lake'), schedules: [{ name: 'nightly', job: 'all', cron: '0 2 * * *', timezone: 'UTC' }] };
    await deployProject(tenant.api, {
      environment: 'prod',
      storagePrefix: `file://${join(stack.info.dataDir, 'lake', 'migration')}`,
      executor: 'remote',
      bindings: { lake: {} },
      files: { 'assets/noop.js': 'export default async () => {};' },
      manifest,
    });
    expect((await tenant.api.post('/environments/prod/schedules/pause', { reason: 'kept across the migration' })).status).toBe(200);
    const environment = Environment.parse((await tenant.api.get('/environments/prod')).body.data);
    const database = stack.info.databases['placement-service'];
    // The data directory as the first design left it: no stored schedule, a Temporal Schedule per schedule.
    await mongo.db(database).collection('schedules').deleteMany({ environment_id: environment.id });
    const scheduleId = `sched-${environment.id}-nightly`;
    const input: ScheduledRunInput = { tenantId: tenant.tenantId, environmentId: environment.id, environmentName: 'prod', schedule: 'nightly', job: 'all', cron: '0 2 * * *', timezone: 'UTC' };
    await temporal.schedule.create({
      scheduleId,
      spec: { cronExpressions: ['0 2 * * *'], timezone: 'UTC' },
      action: { type: 'startWorkflow', workflowType: 'scheduledRun', taskQueue: stack.services.deploymentsTaskQueue, args: [input] },
      state: { paused: true, note: 'environment prod paused' },
    });
    expect((await storedSchedulesOf(mongo, database, environment.id)).size).toBe(0);

    await stack.services.restart('workflow-worker');
    const gone = await until(
      () => temporal.schedule.getHandle(scheduleId).describe().then(() => false, (error: unknown) => error instanceof ScheduleNotFoundError),
      (deleted) => deleted,
      60_000,
      250,
    );
    expect(gone).toBe(true);
    const stored = await storedSchedulesOf(mongo, database, environment.id);
    expect([...stored.keys()]).toEqual(['nightly']);
    expect(stored.get('nightly')!.next_fire_at).toBeInstanceOf(Date);
    const listed = (await tenant.api.get('/environments/prod/schedules')).body.data;
    expect(listed).toEqual([expect.objectContaining({ name: 'nightly', paused: true, next_run_at: null, last_tick: null })]);
    expect((await tenant.api.get('/environments/prod')).body.data).toMatchObject({ schedules_paused: true, schedules_paused_reason: 'kept across the migration' });
  });
});
