import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  acknowledgedWritesPresent,
  attemptsNeverOverlap,
  deletedEnvironmentsGone,
  deploymentsSettled,
  materializationsBacked,
  oneRunPerTick,
  queuesMatchAttempts,
  runsEndedOnce,
  type EngineStores,
} from '@envengine/test-harness';

const stack = inject('stack');

/**
 * The soak's invariant checks (`npm run soak`), each with a positive control: stores of
 * their own on the suite's MongoDB, first planted sound (the check holds), then with one
 * defect planted (the check breaks and names it).
 */
describe('the soak invariants catch what they guard', () => {
  let mongo: MongoClient;
  let stores: EngineStores;
  const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second));
  const attempt = (id: string, run: string, number: number, status: string, started: number | null, finished: number | null) => ({
    _id: id, run_id: run, number, status, started_at: started === null ? null : at(started), finished_at: finished === null ? null : at(finished),
    waiting_for_slot: false, executor: 'remote', admitted_at: null, enqueued_at: at(0),
  });

  beforeAll(async () => {
    mongo = await MongoClient.connect(stack.mongoUrl);
    const prefix = `soakctl_${randomBytes(4).toString('hex')}`;
    stores = { placement: mongo.db(`${prefix}_placement`), deployment: mongo.db(`${prefix}_deployment`), secrets: mongo.db(`${prefix}_secrets`) };
  });
  afterAll(async () => {
    for (const db of Object.values(stores)) await db.dropDatabase();
    await mongo.close();
  });

  it('one terminal state per run and attempt: a run left running, and a run that succeeded twice, are caught', async () => {
    const runs = stores.placement.collection('runs');
    const attempts = stores.placement.collection('attempts');
    await runs.insertMany([{ _id: 'run_ok', status: 'failed' } as never, { _id: 'run_retried', status: 'succeeded' } as never]);
    await attempts.insertMany([attempt('att_1', 'run_ok', 1, 'failed', 1, 2), attempt('att_2', 'run_retried', 1, 'lost', 1, 20), attempt('att_3', 'run_retried', 2, 'succeeded', 21, 22)] as never[]);
    expect(await runsEndedOnce(stores)).toMatchObject({ held: true, checked: 2 });
    await runs.insertMany([{ _id: 'run_open', status: 'running' } as never, { _id: 'run_twice', status: 'succeeded' } as never]);
    await attempts.insertMany([attempt('att_4', 'run_open', 1, 'running', 1, null), attempt('att_5', 'run_twice', 1, 'succeeded', 1, 2), attempt('att_6', 'run_twice', 2, 'failed', 3, 4)] as never[]);
    const broken = await runsEndedOnce(stores);
    expect(broken.held).toBe(false);
    expect(broken.offenders.join('\n')).toMatch(/run_open: run running/);
    expect(broken.offenders.join('\n')).toMatch(/att_5: attempt 1 succeeded but run run_twice has a later one/);
    expect(broken.offenders.join('\n')).toMatch(/run_twice: run succeeded, its last attempt failed/);
    await runs.deleteMany({});
    await attempts.deleteMany({});
  });

  it('no overlapping attempts: a second attempt started before the first finished is caught', async () => {
    const attempts = stores.placement.collection('attempts');
    await attempts.insertMany([attempt('att_a1', 'run_a', 1, 'lost', 1, 20), attempt('att_a2', 'run_a', 2, 'succeeded', 20, 25)] as never[]);
    expect(await attemptsNeverOverlap(stores)).toMatchObject({ held: true, checked: 2 });
    await attempts.insertMany([attempt('att_b1', 'run_b', 1, 'lost', 1, 30), attempt('att_b2', 'run_b', 2, 'succeeded', 20, 35)] as never[]);
    const broken = await attemptsNeverOverlap(stores);
    expect(broken).toMatchObject({ held: false, offenders: [expect.stringMatching(/^run_b: attempt 2 started .* before attempt 1 finished/)] });
    await attempts.deleteMany({});
  });

  it('every acknowledged write present: a run answered 201 and never stored is caught; one of a deleted environment is not asked for', async () => {
    await stores.placement.collection('runs').insertOne({ _id: 'run_kept', tenant_id: 'ten_a', environment_id: 'env_a', status: 'succeeded' } as never);
    const kept = { kind: 'run', tenantId: 'ten_a', environmentId: 'env_a', id: 'run_kept' } as const;
    const ofDeleted = { kind: 'run', tenantId: 'ten_a', environmentId: 'env_gone', id: 'run_gone' } as const;
    expect(await acknowledgedWritesPresent(stores, [kept, ofDeleted], new Set(['env_gone']))).toMatchObject({ held: true, checked: 1 });
    const lost = { kind: 'run', tenantId: 'ten_a', environmentId: 'env_a', id: 'run_lost' } as const;
    const broken = await acknowledgedWritesPresent(stores, [kept, lost], new Set());
    expect(broken).toMatchObject({ held: false, offenders: [expect.stringContaining('"id":"run_lost"')] });
    // Another tenant's row of the same id is not the write.
    expect((await acknowledgedWritesPresent(stores, [{ ...kept, tenantId: 'ten_b' }], new Set())).held).toBe(false);
    await stores.placement.collection('runs').deleteMany({});
  });

  it('deployments settled and one run per tick: a deployment mid-ingest and a tick with two runs are caught', async () => {
    await stores.deployment.collection('deployments').insertMany([{ _id: 'dep_1', status: 'ready' }, { _id: 'dep_2', status: 'failed' }] as never[]);
    expect(await deploymentsSettled(stores)).toMatchObject({ held: true, checked: 2 });
    await stores.deployment.collection('deployments').insertOne({ _id: 'dep_3', status: 'validating' } as never);
    expect(await deploymentsSettled(stores)).toMatchObject({ held: false, offenders: ['dep_3: validating'] });

    const tick = (id: string, key: string) => ({ _id: id, trigger: 'schedule', environment_id: 'env_a', schedule: 'minutely', schedule_tick: key, status: 'succeeded' });
    await stores.placement.collection('runs').insertMany([tick('run_t1', '2026-01-01T00:01:00'), tick('run_t2', '2026-01-01T00:02:00')] as never[]);
    expect(await oneRunPerTick(stores)).toMatchObject({ held: true, checked: 2 });
    await stores.placement.collection('runs').insertOne(tick('run_t3', '2026-01-01T00:02:00') as never);
    expect(await oneRunPerTick(stores)).toMatchObject({ held: false, offenders: ['env_a/minutely@2026-01-01T00:02:00: run_t2, run_t3'] });
    await stores.placement.collection('runs').deleteMany({});
  });

  it("materializations backed: one its attempt does not record as the asset's outcome, and one whose file is gone, are caught; one of a lost attempt that recorded it, and one of an asset that failed after its emit, are not", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'soakctl-'));
    writeFileSync(join(dir, 'present.parquet'), 'x');
    const present = pathToFileURL(join(dir, 'present.parquet')).href;
    const withOutcome = (row: object, key: string, status: string, materialization: string | null) => ({ ...row, assets: [{ key, status, materialization_id: materialization, error: null }] });
    await stores.placement.collection('attempts').insertMany([
      withOutcome(attempt('att_ok', 'run_m', 1, 'succeeded', 1, 2), 'orders', 'succeeded', 'mat_ok'),
      // Lost after the asset succeeded: its materialization stays, the retry skips the asset.
      withOutcome(attempt('att_lost', 'run_l', 1, 'lost', 1, 20), 'orders', 'succeeded', 'mat_of_lost'),
      withOutcome(attempt('att_bad', 'run_n', 1, 'failed', 1, 2), 'orders', 'failed', null),
      // Emitted, then threw (or timed out while its record was under way): the rows stand, the retry skips the asset.
      withOutcome(attempt('att_threw', 'run_t', 1, 'failed', 1, 2), 'orders', 'failed', 'mat_of_throw'),
    ] as never[]);
    const materializations = stores.deployment.collection('materializations');
    await materializations.insertMany([
      { _id: 'mat_ok', attempt_id: 'att_ok', asset_key: 'orders', location: present },
      { _id: 'mat_of_lost', attempt_id: 'att_lost', asset_key: 'orders', location: present },
      { _id: 'mat_of_throw', attempt_id: 'att_threw', asset_key: 'orders', location: present },
    ] as never[]);
    expect(await materializationsBacked(stores)).toMatchObject({ held: true, checked: 3 });
    await materializations.insertMany([
      { _id: 'mat_failed', attempt_id: 'att_bad', asset_key: 'orders', location: present },
      { _id: 'mat_fileless', attempt_id: 'att_ok', asset_key: 'orders', location: pathToFileURL(join(dir, 'gone.parquet')).href },
    ] as never[]);
    const broken = await materializationsBacked(stores);
    expect(broken.held).toBe(false);
    expect(broken.offenders).toEqual([
      'mat_failed: attempt att_bad records orders as failed with no materialization',
      'mat_fileless: attempt att_ok records orders as succeeded with mat_ok',
      expect.stringMatching(/^mat_fileless: its file .*gone\.parquet is missing/),
    ]);
    await stores.placement.collection('attempts').deleteMany({});
  });

  it('queues match attempts: an orphan job and a queued attempt with no job are caught', async () => {
    const attempts = stores.placement.collection('attempts');
    await attempts.insertMany([attempt('att_q', 'run_q', 1, 'queued', null, null), attempt('att_done', 'run_d', 1, 'succeeded', 1, 2)] as never[]);
    expect(await queuesMatchAttempts(stores, new Map([['att_q', 'attempts-local (wait)']]))).toMatchObject({ held: true });
    const broken = await queuesMatchAttempts(stores, new Map([['att_done', 'attempts-local (wait)']]));
    expect(broken.held).toBe(false);
    expect(broken.offenders).toEqual(['att_done: a job in attempts-local (wait) for an attempt succeeded', 'att_q: queued and offered, with no job in its queue']);
    await attempts.deleteMany({});
  });

  it('a deleted environment is gone: a binding left behind is caught, in whatever collection', async () => {
    await stores.secrets.collection('bindings').insertOne({ _id: 'bnd_live', environment_id: 'env_live' } as never);
    expect(await deletedEnvironmentsGone(stores, new Set(['env_gone']), {})).toMatchObject({ held: true });
    await stores.secrets.collection('bindings').insertOne({ _id: 'bnd_left', environment_id: 'env_gone' } as never);
    const broken = await deletedEnvironmentsGone(stores, new Set(['env_gone']), {});
    expect(broken).toMatchObject({ held: false, offenders: [expect.stringMatching(/_secrets\.bindings bnd_left: of deleted environment env_gone$/)] });
  });

  it('a deleted environment is gone from Redis and, deleted with its data, from its prefix: a key or a file left is caught', async () => {
    const sound = { redisKeys: ['envengine:{attempts-local}:wait', 'envengine:stripe:env_live'], purgedPrefixFiles: new Map([['env_purged', []]]) };
    const deleted = new Set(['env_gone2', 'env_purged']);
    expect(await deletedEnvironmentsGone(stores, deleted, {}, sound)).toMatchObject({ held: true });
    const left = { redisKeys: [...sound.redisKeys, 'envengine:stripe:env_gone2'], purgedPrefixFiles: new Map([['env_purged', ['/lake/t/prod/orders/mat_1.parquet']]]) };
    expect(await deletedEnvironmentsGone(stores, deleted, {}, left)).toMatchObject({
      held: false,
      offenders: ['redis envengine:stripe:env_gone2: names deleted environment env_gone2', '/lake/t/prod/orders/mat_1.parquet: left under the prefix of env_purged, deleted with its data'],
    });
  });
});
