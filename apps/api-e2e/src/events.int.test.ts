import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AttemptStarted, EngineEvent, INTERNAL_HEADERS, PoolCredentialIssued, Run, type EventType } from '@envengine/contracts';
import { createTenant, deployProject, startTestStack, until, type ApiClient, type ApiResponse, type TestStack, type TestTenant } from '@envengine/test-harness';
import { allEvents } from './events-fixtures.ts';
import { WEBHOOK_TEST_SETTINGS, WebhookReceiver } from './webhook-fixtures.ts';
import { ASSET_CODE, deployRunsProject, issueCredential, RUN_TEST_SETTINGS, runsManifest, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');

/** Waits until the audit log holds `count` events matching `query` (the relay's lag), and answers them. */
async function eventsWhen(api: ApiClient, count: number, query = ''): Promise<EngineEvent[]> {
  return until(() => allEvents(api, query), (events) => events.length >= count, 20_000, 50);
}

const requestIdOf = (response: ApiResponse) => response.headers.get('x-request-id');

describe('events: every change of the placement scope, in the audit log', () => {
  let tenant: TestTenant;
  let other: TestTenant;
  let lake: string;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'events');
    other = await createTenant(stack, 'events-other');
    lake = join(stack.dataDir, 'lake', tenant.tenantId);
  });

  it('records one event per change, with its actor and request id; a read, a refusal or a change to the same value records none', async () => {
    const changes: Array<[EventType, ApiResponse]> = [];
    const created = await tenant.api.post('/environments', { name: 'ev', storage_prefix: `file://${lake}-ev`, executor: 'local' });
    expect(created.status).toBe(201);
    changes.push(['environment.created', created]);
    changes.push(['environment.updated', await tenant.api.patch('/environments/ev', { strict: true })]);
    // A caller's own actor or tenant header is never taken: the gateway names the caller.
    const forged = { headers: { [INTERNAL_HEADERS.actor]: 'engine', [INTERNAL_HEADERS.tenantId]: other.tenantId } };
    changes.push(['placement.changed', await tenant.api.post('/environments/ev/placement', { executor: 'remote' }, forged)]);
    expect((await tenant.api.post('/environments/ev/placement', { executor: 'remote' })).status).toBe(200);
    changes.push(['schedules.paused', await tenant.api.post('/environments/ev/schedules/pause', { reason: 'testing events' })]);
    expect((await tenant.api.post('/environments/ev/schedules/pause', {})).status).toBe(200);
    changes.push(['schedules.resumed', await tenant.api.post('/environments/ev/schedules/resume')]);
    const issued = await tenant.api.post('/pool/credentials', { label: 'events' });
    changes.push(['pool_credential.created', issued]);
    const credential = PoolCredentialIssued.parse(issued.body.data);
    changes.push(['pool_credential.revoked', await tenant.api.delete(`/pool/credentials/${credential.id}`)]);
    changes.push(['placement.changed', await tenant.api.post('/placement', { executor: 'local' })]);
    for (const [, response] of changes) expect(response.status, response.text).toBeLessThan(300);

    // Reads, refusals and no-ops.
    for (const path of ['/environments', '/environments/ev', '/environments/ev/runs', '/environments/ev/schedules', '/pool', '/quotas', '/events']) {
      expect((await tenant.api.get(path)).status).toBe(200);
    }
    const taken = await tenant.api.post('/environments', { name: 'ev', storage_prefix: `file://${lake}-ev2`, executor: 'local' });
    expect(taken.status, taken.text).toBe(409);
    expect((await tenant.api.post('/environments', { name: 'Bad Name!', storage_prefix: `file://${lake}-bad`, executor: 'local' })).status).toBe(422);
    expect((await tenant.api.patch('/environments/nope', { strict: true })).status).toBe(404);
    expect((await tenant.api.post('/environments/ev/runs', { job: 'all' })).status).toBe(409);
    expect((await tenant.api.delete(`/pool/credentials/${credential.id}`)).status).toBe(404);

    const events = await eventsWhen(tenant.api, changes.length);
    // A marker written after everything above: once it is in, nothing more is coming.
    const marker = await tenant.api.post('/environments/ev/schedules/pause', { reason: 'marker' });
    const withMarker = await eventsWhen(tenant.api, changes.length + 1);
    expect(withMarker.at(-1)).toMatchObject({ type: 'schedules.paused', request_id: requestIdOf(marker) });
    expect(withMarker.slice(0, -1)).toEqual(events);

    expect(events.map((event) => [event.type, event.request_id])).toEqual(changes.map(([type, response]) => [type, requestIdOf(response)]));
    for (const event of events) expect(event.actor).toBe(tenant.tokenId);
    const environmentId = created.body.data.id as string;
    expect(events[0]).toMatchObject({ environment: 'ev', subject: { kind: 'environment', id: environmentId }, data: { executor: 'local', preview: false } });
    expect(events[1]!.data).toEqual({ fields: ['strict'] });
    expect(events[2]!.data).toEqual({ executor: 'remote', previous: 'local' });
    expect(events[5]).toMatchObject({ environment: null, subject: { kind: 'pool_credential', id: credential.id }, data: { label: 'events' } });
    expect(events.at(-1)).toMatchObject({ environment: 'ev', data: { executor: 'local', previous: 'remote' } });

    // Filters and paging.
    expect((await allEvents(tenant.api, '&type=schedules.*')).map((event) => event.type)).toEqual(['schedules.paused', 'schedules.resumed', 'schedules.paused']);
    expect((await allEvents(tenant.api, `&subject=${credential.id}`)).map((event) => event.type)).toEqual(['pool_credential.created', 'pool_credential.revoked']);
    const newest = await tenant.api.get('/events?limit=2');
    expect(newest.body.data.map((event: EngineEvent) => event.id)).toEqual([withMarker.at(-1)!.id, withMarker.at(-2)!.id]);
    const older = await tenant.api.get(`/events?limit=2&cursor=${withMarker.at(-2)!.id}`);
    expect(older.body.data.map((event: EngineEvent) => event.id)).toEqual([withMarker.at(-3)!.id, withMarker.at(-4)!.id]);
    const until_ = encodeURIComponent(events[0]!.time);
    expect((await allEvents(tenant.api, `&until=${until_}`)).length).toBeLessThan(events.length);

    // Another tenant sees none of them, by any filter.
    expect(await allEvents(other.api)).toEqual([]);
    expect(await allEvents(other.api, '&environment=ev')).toEqual([]);
    expect(await allEvents(other.api, `&subject=${credential.id}`)).toEqual([]);
  });

  it('refuses a bad query with a clear error', async () => {
    for (const query of ['type=run.nope', 'type=nothing.*', 'cursor=run_1', 'since=yesterday', 'limit=0', 'limit=501', 'colour=red']) {
      const response = await tenant.api.get(`/events?${query}`);
      expect([query, response.status, response.body.error.code]).toEqual([query, 422, 'invalid_request']);
    }
  });

  it('records each run ending once: success, failure after a retry, cancel, a lost attempt, and a tear-down cancel', async () => {
    await deployRunsProject(tenant, `${lake}-runs`, 'local');
    const runEvents = async (runId: string, count: number) => {
      const events = await eventsWhen(tenant.api, count, `&environment=prod`);
      return events.filter((event) => event.subject.id === runId || (event.data as { run_id?: string }).run_id === runId);
    };

    const succeeded = await tenant.api.post('/environments/prod/runs', { job: 'all' });
    const success = Run.parse(succeeded.body.data);
    expect((await waitForRun(tenant, success.id)).status).toBe('succeeded');
    const successEvents = await until(() => runEvents(success.id, 3), (events) => events.length >= 3, 20_000, 50);
    expect(successEvents.map((event) => [event.type, event.actor])).toEqual([
      ['run.queued', tenant.tokenId],
      ['run.started', 'engine'],
      ['run.succeeded', 'engine'],
    ]);
    expect(successEvents[0]).toMatchObject({ request_id: requestIdOf(succeeded), data: { trigger: 'manual', job: 'all' } });

    const failing = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['thrower'], max_attempts: 2 })).body.data);
    expect((await waitForRun(tenant, failing.id)).status).toBe('failed');
    const failureEvents = await until(() => runEvents(failing.id, 5), (events) => events.some((event) => event.type === 'run.failed'), 20_000, 50);
    expect(failureEvents.map((event) => event.type)).toEqual(['run.queued', 'run.started', 'attempt.retried', 'run.failed']);
    expect(failureEvents[2]).toMatchObject({ subject: { kind: 'attempt' }, data: { run_id: failing.id, attempt: 2 } });
    expect(failureEvents[3]!.data).toMatchObject({ attempt: 2, error: expect.stringContaining('boom from user code') });

    const gated = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['gated'] })).body.data);
    const cancel = await tenant.api.post(`/runs/${gated.id}/cancel`);
    expect(cancel.status).toBe(200);
    const cancelEvents = await until(() => runEvents(gated.id, 1), (events) => events.some((event) => event.type === 'run.canceled'), 20_000, 50);
    expect(cancelEvents.filter((event) => event.type === 'run.canceled')).toEqual([
      expect.objectContaining({ actor: tenant.tokenId, request_id: requestIdOf(cancel), data: { trigger: 'manual', reason: 'request' } }),
    ]);
    // Canceling again is refused, and records nothing.
    expect((await tenant.api.post(`/runs/${gated.id}/cancel`)).status).toBe(409);

    // A pool worker that starts an attempt and goes silent: the reaper finds it lost.
    const remoteEnvironment = 'prod';
    expect((await tenant.api.post(`/environments/${remoteEnvironment}/placement`, { executor: 'remote' })).status).toBe(200);
    const pool = tenant.api.withToken((await issueCredential(tenant)).token);
    const lostRun = Run.parse((await tenant.api.post(`/environments/${remoteEnvironment}/runs`, { assets: ['orders'] })).body.data);
    const worker = { id: 'events-worker-1', name: 'events-worker', executor: 'remote', concurrency: 1, sandbox: 'bwrap' } as const;
    const started = await pool.post(`/worker/attempts/${lostRun.attempts[0]!.id}/start`, { worker });
    expect(started.status, started.text).toBe(200);
    AttemptStarted.parse(started.body.data);
    expect((await waitForRun(tenant, lostRun.id, 60_000)).status).toBe('failed');
    const lostEvents = await until(() => runEvents(lostRun.id, 1), (events) => events.some((event) => event.type === 'run.failed'), 20_000, 50);
    expect(lostEvents.map((event) => [event.type, event.actor])).toEqual([
      ['run.queued', tenant.tokenId],
      ['run.started', expect.stringMatching(/^worker:pcr_/)],
      ['attempt.lost', 'engine'],
      ['run.failed', 'engine'],
    ]);

    // A run still queued when its environment is deleted: canceled by the tear-down, and its events outlive the environment.
    const queued = Run.parse((await tenant.api.post(`/environments/${remoteEnvironment}/runs`, { assets: ['orders'] })).body.data);
    const deleted = await tenant.api.delete(`/environments/${remoteEnvironment}?force=true`);
    expect(deleted.status).toBe(200);
    const teardownEvents = await until(
      () => allEvents(tenant.api, `&environment=${remoteEnvironment}`),
      (events) => events.some((event) => event.type === 'environment.deleted') && events.some((event) => event.subject.id === queued.id && event.type === 'run.canceled'),
      20_000,
      50,
    );
    expect(teardownEvents.filter((event) => event.subject.id === queued.id).map((event) => [event.type, event.data])).toEqual([
      ['run.queued', expect.anything()],
      ['run.canceled', { trigger: 'manual', reason: 'environment_deleted' }],
    ]);
    expect(teardownEvents.filter((event) => event.type === 'environment.deleted')).toEqual([
      expect.objectContaining({ actor: tenant.tokenId, request_id: requestIdOf(deleted), data: { purge_data: false, expired: false } }),
    ]);
    // Every run ended once, whatever path ended it.
    const endings = teardownEvents.filter((event) => ['run.succeeded', 'run.failed', 'run.canceled'].includes(event.type));
    expect(new Set(endings.map((event) => event.subject.id)).size).toBe(endings.length);
  });
});

describe('events of the schedules', () => {
  it("records the first of a paused schedule's skipped ticks, by the schedule, and counts the rest", async () => {
    const tenant = await createTenant(stack, 'events-ticks');
    const lake = join(stack.dataDir, 'lake', tenant.tenantId);
    await deployProject(tenant.api, {
      environment: 'ticks',
      storagePrefix: `file://${lake}`,
      executor: 'local',
      // Made paused (a preview): every tick of its per-second schedule is skipped.
      settings: { kind: 'preview' },
      bindings: { warehouse: {}, gate: { config: { open: false } } },
      files: ASSET_CODE,
      manifest: { ...runsManifest(), schedules: [{ name: 'every_second', job: 'all', cron: '* * * * * *', timezone: 'UTC' }] },
    });
    // Three ticks skipped, as the schedule counts them: one event, for the first (a skip begins; its repeats are counted, not recorded).
    await until(() => tenant.api.get('/environments/ticks/schedules'), (answer) => (answer.body.data[0]?.ticks?.skipped_paused ?? 0) >= 3, 30_000, 100);
    // A change after them: once its event is in, so is every event the scope recorded before it (its relay goes in order).
    const marker = await tenant.api.patch('/environments/ticks', { strict: true });
    await until(() => allEvents(tenant.api, '&type=environment.updated'), (events) => events.some((event) => event.request_id === marker.headers.get('x-request-id')), 20_000, 50);
    const skipped = await allEvents(tenant.api, '&type=schedule.tick_skipped');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toMatchObject({ environment: 'ticks', subject: { kind: 'schedule', id: 'every_second' }, actor: 'schedule', request_id: null, data: { reason: 'paused', running_run_id: null } });
    expect((await tenant.api.get('/environments/ticks/runs')).body.data).toEqual([]);
    expect((await tenant.api.delete('/environments/ticks')).status).toBe(200);
  });
});

describe('the outbox relay across a kill -9', () => {
  let own: TestStack;
  let mongo: MongoClient;

  beforeAll(async () => {
    own = await startTestStack({ env: { ...RUN_TEST_SETTINGS, ...WEBHOOK_TEST_SETTINGS }, mongoTtlMonitorSeconds: 1 });
    mongo = await MongoClient.connect(own.info.mongoUrl);
  });

  afterAll(async () => {
    await mongo?.close();
    await own?.stop();
  });

  it('publishes what was committed before the kill, once per event id, also when a batch is sent twice; a webhook receives each once', async () => {
    const tenant = await createTenant(own.info, 'relay');
    const receiver = await WebhookReceiver.start();
    const webhook = await tenant.api.post('/webhooks', { url: receiver.url('/relay'), events: ['environment.created'] });
    expect(webhook.status, webhook.text).toBe(201);
    // Its own event published first: what follows is the environments'.
    await until(() => allEvents(tenant.api, '&type=webhook.created'), (events) => events.length === 1, 20_000, 50);
    const created = '&type=environment.created';
    const placement = mongo.db(own.info.databases['placement-service']);
    const killPlacement = async () => {
      const pid = own.services.processes['placement-service'].pid!;
      process.kill(pid, 'SIGKILL');
      await until(async () => { try { process.kill(pid, 0); return false; } catch { return true; } }, (gone) => gone, 20_000, 20);
    };
    // Another relay holds the lease: this one commits events and cannot publish them. (Given
    // while the service is down: a relay that holds the lease renews it only at half its term,
    // so it would publish for a few seconds more, as no other relay can take it meanwhile.)
    await killPlacement();
    await placement.collection('event_relay_leases').updateOne(
      { _id: 'relay' as never },
      { $set: { tenant_id: 'engine', holder: 'the test', expires_at: new Date(Date.now() + 3_600_000) } },
      { upsert: true },
    );
    await own.services.restart('placement-service');
    const names = ['k1', 'k2', 'k3'];
    for (const name of names) {
      const created = await tenant.api.post('/environments', { name, storage_prefix: `file://${own.info.dataDir}/lake/${name}`, executor: 'local' });
      expect(created.status, created.text).toBe(201);
    }
    const outbox = placement.collection<{ _id: string; type: string; pending?: boolean }>('event_outbox');
    const committed = await outbox.find({ tenant_id: tenant.tenantId, type: 'environment.created' }).toArray();
    expect(committed.map((row) => row.pending)).toEqual([true, true, true]);
    expect(await allEvents(tenant.api, created)).toEqual([]);

    await killPlacement();
    await placement.collection('event_relay_leases').deleteOne({ _id: 'relay' as never });
    await own.services.restart('placement-service');

    const published = await eventsWhen(tenant.api, 3, created);
    expect(published.map((event) => [event.type, event.environment])).toEqual(names.map((name) => ['environment.created', name]));
    expect(published.map((event) => event.id)).toEqual(committed.map((row) => row._id));

    // A relay killed after its publish and before its mark sends the batch again: still one event per id.
    await outbox.updateMany({ tenant_id: tenant.tenantId }, { $set: { pending: true } });
    await until(() => outbox.countDocuments({ tenant_id: tenant.tenantId, pending: true }), (left) => left === 0, 20_000, 50);
    expect((await allEvents(tenant.api, created)).map((event) => event.id)).toEqual(committed.map((row) => row._id));

    // The webhook: each event delivered once as the receiver sees it. The batch sent again
    // made no second delivery (its publish, marked only once done, includes the fan-out).
    try {
      await receiver.waitFor('/relay', (deliveries) => deliveries.length >= 3);
      const deliveries = (await tenant.api.get(`/webhooks/${webhook.body.data.id}/deliveries`)).body.data as Array<{ event_id: string; status: string }>;
      expect(deliveries.map((delivery) => delivery.event_id).sort()).toEqual(committed.map((row) => row._id).sort());
      expect(receiver.at('/relay').map((delivery) => delivery.headers['webhook-id']).sort()).toEqual(committed.map((row) => row._id).sort());
    } finally {
      await receiver.close();
    }
  });

  it('renews its lease once half its 10-second term has passed, not at every pass (every 500 ms, and on every event)', async () => {
    const tenant = await createTenant(own.info, 'lease');
    const leases = mongo.db(own.info.databases['placement-service']).collection<{ _id: string; holder: string; expires_at: Date }>('event_relay_leases');
    const seen = new Map<number, string>();
    const started = Date.now();
    // Eight seconds of the lease as MongoDB stores it, while events keep the relay passing.
    for (let made = 0; Date.now() - started < 8_000; made += 1) {
      if (made % 5 === 0) expect((await tenant.api.post('/environments', { name: `l${made}`, storage_prefix: `file://${own.info.dataDir}/lake/l${made}`, executor: 'local' })).status).toBe(201);
      const lease = await leases.findOne({ _id: 'relay' });
      expect(lease!.expires_at.getTime()).toBeGreaterThan(Date.now());
      seen.set(lease!.expires_at.getTime(), lease!.holder);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // One holder throughout, never expired, and at most two renewals in eight seconds (of 16 passes at least).
    expect(new Set(seen.values()).size).toBe(1);
    expect(seen.size).toBeLessThanOrEqual(3);
    // The relay kept publishing meanwhile.
    await eventsWhen(tenant.api, 8, '&type=environment.created');
  });

  it('removes events older than EVENT_RETENTION_DAYS with the TTL index', async () => {
    const indexes = await mongo.db(own.info.databases['placement-service']).collection('events').indexes();
    expect(indexes.find((index) => index.name === 'time_retention')).toMatchObject({ key: { time: 1 }, expireAfterSeconds: 90 * 86_400 });
    const tenant = await createTenant(own.info, 'retention');
    expect((await tenant.api.post('/environments', { name: 'old', storage_prefix: `file://${own.info.dataDir}/lake/old`, executor: 'local' })).status).toBe(201);
    const [event] = await eventsWhen(tenant.api, 1);
    // Restarted with a retention of a day, and the event made two days old: the TTL monitor takes it.
    await own.services.restart('placement-service', { EVENT_RETENTION_DAYS: '1' });
    const events = mongo.db(own.info.databases['placement-service']).collection('events');
    expect((await events.indexes()).find((index) => index.name === 'time_retention')).toMatchObject({ expireAfterSeconds: 86_400 });
    await events.updateOne({ _id: event!.id as never }, { $set: { time: new Date(Date.now() - 2 * 86_400_000) } });
    // The stack's TTL monitor passes every second.
    await until(() => events.countDocuments({ _id: event!.id as never }), (left) => left === 0, 30_000, 200);
    // A younger one stays.
    const young = await tenant.api.post('/environments', { name: 'young', storage_prefix: `file://${own.info.dataDir}/lake/young`, executor: 'local' });
    expect(young.status).toBe(201);
    expect((await eventsWhen(tenant.api, 1)).map((kept) => kept.environment)).toEqual(['young']);
  }, 120_000);
});
