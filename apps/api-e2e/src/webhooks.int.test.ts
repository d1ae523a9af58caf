import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { EngineEvent, ErrorBody, Webhook, WebhookCreated, WebhookDelivery, WebhookSecretRotated } from '@envengine/contracts';
import { createTenant, startTestStack, until, type ApiClient, type TestStack, type TestTenant } from '@envengine/test-harness';
import { allEvents } from './events-fixtures.ts';
import { TEST_TRIES, TestDnsServer, WEBHOOK_TEST_SETTINGS, WebhookReceiver, type ReceivedDelivery } from './webhook-fixtures.ts';

const stack = inject('stack');

const bodyOf = (delivery: ReceivedDelivery) => JSON.parse(delivery.body) as { type: string; timestamp: string; data: EngineEvent };
const typesOf = (deliveries: ReceivedDelivery[]) => deliveries.map((delivery) => bodyOf(delivery).type);

async function createWebhook(api: ApiClient, body: Record<string, unknown>): Promise<WebhookCreated> {
  const response = await api.post('/webhooks', body);
  expect(response.status, response.text).toBe(201);
  return WebhookCreated.parse(response.body.data);
}

async function deliveriesOf(api: ApiClient, id: string, query = ''): Promise<WebhookDelivery[]> {
  const response = await api.get(`/webhooks/${id}/deliveries${query}`);
  expect(response.status, response.text).toBe(200);
  return (response.body.data as unknown[]).map((row) => WebhookDelivery.parse(row));
}

describe('webhooks: signed deliveries of events, retried, in order, to receivers off the engine\'s network', () => {
  let tenant: TestTenant;
  let other: TestTenant;
  let receiver: WebhookReceiver;
  let lake: string;
  let environment = 0;
  /** A new environment of the tenant, each test its own: its events are the test's. */
  const newEnvironment = async (api = tenant.api): Promise<string> => {
    const name = `wh-${++environment}`;
    const created = await api.post('/environments', { name, storage_prefix: `file://${lake}-${name}`, executor: 'local' });
    expect(created.status, created.text).toBe(201);
    return name;
  };

  beforeAll(async () => {
    tenant = await createTenant(stack, 'webhooks');
    other = await createTenant(stack, 'webhooks-other');
    receiver = await WebhookReceiver.start();
    lake = join(stack.dataDir, 'lake', tenant.tenantId, 'webhooks');
  });

  afterAll(async () => {
    await receiver?.close();
  });

  it('delivers each wanted event once, signed so that the Standard Webhooks library verifies it, with the event as GET /events shows it', async () => {
    const name = await newEnvironment();
    const webhook = await createWebhook(tenant.api, { url: receiver.url('/signed'), events: ['environment.*', 'schedules.paused'], environment: name, description: 'the signed test' });
    expect(webhook).toMatchObject({ enabled: true, environment: name, events: ['environment.*', 'schedules.paused'], disabled_reason: null, previous_secret_expires_at: null });
    // The secret is shown once: never in a read.
    for (const read of [await tenant.api.get(`/webhooks/${webhook.id}`), await tenant.api.get('/webhooks')]) {
      expect(read.status).toBe(200);
      expect(read.text).not.toContain(webhook.secret);
      expect(read.text).not.toContain(webhook.secret.slice('whsec_'.length, 30));
    }
    expect(Webhook.parse((await tenant.api.get(`/webhooks/${webhook.id}`)).body.data)).toEqual(Webhook.parse({ ...webhook, secret: undefined }));

    expect((await tenant.api.patch(`/environments/${name}`, { max_concurrent_runs: 3 })).status).toBe(200);
    expect((await tenant.api.post(`/environments/${name}/schedules/pause`, { reason: 'webhooks' })).status).toBe(200);
    // Not wanted: a type outside the filters, and another environment's event.
    expect((await tenant.api.post(`/environments/${name}/schedules/resume`)).status).toBe(200);
    await newEnvironment();
    // A marker after them all: once it is in, everything before it was offered.
    expect((await tenant.api.patch(`/environments/${name}`, { max_concurrent_runs: 4 })).status).toBe(200);

    const received = await receiver.waitFor('/signed', (deliveries) => deliveries.length >= 3);
    expect(typesOf(received)).toEqual(['environment.updated', 'schedules.paused', 'environment.updated']);
    const verifier = new StandardWebhook(webhook.secret);
    const events = await allEvents(tenant.api, `&environment=${name}`);
    for (const delivery of received) {
      const verified = verifier.verify(delivery.body, delivery.headers as Record<string, string>) as { data: EngineEvent };
      expect(delivery.headers['webhook-id']).toBe(verified.data.id);
      expect(delivery.headers['content-type']).toBe('application/json');
      expect(verified.data).toEqual(events.find((event) => event.id === verified.data.id));
      // A body changed on the way, or signed by another secret, is refused by the receiver.
      expect(() => verifier.verify(delivery.body.replace(name, `${name}x`), delivery.headers as Record<string, string>)).toThrow();
    }
    const log = await deliveriesOf(tenant.api, webhook.id);
    expect(log.map((delivery) => [delivery.event_type, delivery.status, delivery.attempts.length, delivery.attempts[0]!.status_code])).toEqual([
      ['environment.updated', 'delivered', 1, 200],
      ['schedules.paused', 'delivered', 1, 200],
      ['environment.updated', 'delivered', 1, 200],
    ]);
    expect(log.every((delivery) => delivery.attempts[0]!.latency_ms >= 0 && delivery.attempts[0]!.error === null)).toBe(true);
    expect((await deliveriesOf(tenant.api, webhook.id, '?status=pending&limit=1'))).toEqual([]);
    const [newest] = await deliveriesOf(tenant.api, webhook.id, '?limit=1');
    expect((await deliveriesOf(tenant.api, webhook.id, `?cursor=${newest!.id}`)).map((delivery) => delivery.id)).toEqual(log.slice(1).map((delivery) => delivery.id));
  });

  it('retries a receiver answering 500 three times: the fourth try delivers it, and the stream after it waits its turn, in order', async () => {
    const name = await newEnvironment();
    receiver.answer('/flaky', (count) => (count < 3 ? 500 : 200));
    const webhook = await createWebhook(tenant.api, { url: receiver.url('/flaky'), events: ['environment.updated'], environment: name });
    for (const runs of [1, 2, 3, 4, 5]) expect((await tenant.api.patch(`/environments/${name}`, { max_concurrent_runs: runs })).status).toBe(200);

    const received = await receiver.waitFor('/flaky', (deliveries) => deliveries.filter((delivery) => delivery.status === 200).length >= 5);
    // The first event four times (three 500s, then its 200), then the others once each, in the order they happened.
    const ids = received.map((delivery) => delivery.headers['webhook-id']);
    const events = (await allEvents(tenant.api, `&environment=${name}&type=environment.updated`)).map((event) => event.id);
    expect(ids).toEqual([events[0], events[0], events[0], ...events]);
    expect(received.map((delivery) => delivery.status)).toEqual([500, 500, 500, 200, 200, 200, 200, 200]);
    expect(received.map((delivery) => bodyOf(delivery).data.data)).toEqual([1, 1, 1, 1, 2, 3, 4, 5].map(() => ({ fields: ['max_concurrent_runs'] })));

    const [first] = (await deliveriesOf(tenant.api, webhook.id)).reverse();
    expect(first!.status).toBe('delivered');
    expect(first!.attempts.map((attempt) => [attempt.status_code, attempt.error])).toEqual([[500, 'answered 500'], [500, 'answered 500'], [500, 'answered 500'], [200, null]]);
    // Each wait at least the schedule's (100, 400, 750 ms).
    const times = first!.attempts.map((attempt) => Date.parse(attempt.at));
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(100);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(400);
  });

  it('sends nothing to a disabled webhook, and a webhook failing for its whole retry window is disabled, with an event', async () => {
    const name = await newEnvironment();
    const disabled = await createWebhook(tenant.api, { url: receiver.url('/disabled'), events: ['*'], environment: name });
    const witness = await createWebhook(tenant.api, { url: receiver.url('/witness'), events: ['*'], environment: name });
    const patched = await tenant.api.patch(`/webhooks/${disabled.id}`, { enabled: false });
    expect(patched.status, patched.text).toBe(200);
    expect(Webhook.parse(patched.body.data)).toMatchObject({ enabled: false, disabled_reason: 'request' });
    for (const runs of [1, 2]) expect((await tenant.api.patch(`/environments/${name}`, { max_concurrent_runs: runs })).status).toBe(200);
    await receiver.waitFor('/witness', (deliveries) => deliveries.length >= 2);
    expect(receiver.at('/disabled')).toEqual([]);
    expect(await deliveriesOf(tenant.api, disabled.id)).toEqual([]);

    // Always 500: every try fails, the last one disables it.
    receiver.answer('/failing', () => 500);
    const failing = await createWebhook(tenant.api, { url: receiver.url('/failing'), events: ['environment.updated'], environment: name });
    expect((await tenant.api.patch(`/environments/${name}`, { max_concurrent_runs: 3 })).status).toBe(200);
    expect((await tenant.api.patch(`/environments/${name}`, { max_concurrent_runs: 4 })).status).toBe(200);
    const state = await until(async () => Webhook.parse((await tenant.api.get(`/webhooks/${failing.id}`)).body.data), (webhook) => !webhook.enabled, 20_000, 100);
    expect(state).toMatchObject({ enabled: false, disabled_reason: 'failing' });
    expect(receiver.at('/failing')).toHaveLength(TEST_TRIES);
    const log = await deliveriesOf(tenant.api, failing.id);
    expect(log.map((delivery) => [delivery.status, delivery.attempts.length])).toEqual([['skipped', 0], ['failed', TEST_TRIES]]);
    const [disabledEvent] = await until(() => allEvents(tenant.api, `&type=webhook.disabled&subject=${failing.id}`), (events) => events.length > 0, 20_000, 100);
    expect(disabledEvent).toMatchObject({ actor: 'engine', subject: { kind: 'webhook', id: failing.id }, data: { reason: 'failing', delivery_id: log[1]!.id, last_error: 'answered 500' } });

    // Enabled again, it takes new events (and a test reaches a disabled webhook, to try it before).
    receiver.answer('/failing', () => 200);
    const test = await tenant.api.post(`/webhooks/${disabled.id}/test`);
    expect(test.status, test.text).toBe(202);
    const [tested] = await receiver.waitFor('/disabled', (deliveries) => deliveries.length >= 1);
    expect(bodyOf(tested!)).toMatchObject({ type: 'webhook.test', data: { id: test.body.data.event_id, subject: { kind: 'webhook', id: disabled.id }, actor: tenant.tokenId } });
    expect((await tenant.api.patch(`/webhooks/${failing.id}`, { enabled: true })).status).toBe(200);
    expect((await tenant.api.patch(`/environments/${name}`, { max_concurrent_runs: 5 })).status).toBe(200);
    await receiver.waitFor('/failing', (deliveries) => deliveries.some((delivery) => delivery.status === 200));
    // The witness, enabled throughout, got every one of them (its own stream: awaited, not assumed).
    await receiver.waitFor('/witness', (deliveries) => deliveries.length >= 5);
    expect(typesOf(receiver.at('/witness'))).toEqual(['environment.updated', 'environment.updated', 'environment.updated', 'environment.updated', 'environment.updated']);
    expect(witness.enabled).toBe(true);
  });

  it('signs with the new secret and the previous one during the overlap after a rotation', async () => {
    const name = await newEnvironment();
    const webhook = await createWebhook(tenant.api, { url: receiver.url('/rotated'), events: ['environment.updated'], environment: name });
    const rotated = await tenant.api.post(`/webhooks/${webhook.id}/secret/rotate`);
    expect(rotated.status, rotated.text).toBe(200);
    const { secret, previous_secret_expires_at: expires } = WebhookSecretRotated.parse(rotated.body.data);
    expect(secret).not.toBe(webhook.secret);
    expect(Date.parse(expires) - Date.now()).toBeGreaterThan(23 * 3_600_000);
    expect(Webhook.parse((await tenant.api.get(`/webhooks/${webhook.id}`)).body.data).previous_secret_expires_at).toBe(expires);
    expect((await tenant.api.patch(`/environments/${name}`, { max_concurrent_runs: 2 })).status).toBe(200);
    const [delivery] = await receiver.waitFor('/rotated', (deliveries) => deliveries.length >= 1);
    expect(String(delivery!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const key of [secret, webhook.secret]) expect(() => new StandardWebhook(key).verify(delivery!.body, delivery!.headers as Record<string, string>)).not.toThrow();
  });

  it('refuses a target on the engine\'s network, and bad input, changing nothing', async () => {
    const before = (await tenant.api.get('/webhooks')).text;
    const refused = async (body: Record<string, unknown>, code: string, status: number) => {
      const response = await tenant.api.post('/webhooks', body);
      expect([JSON.stringify(body), response.status]).toEqual([JSON.stringify(body), status]);
      expect(ErrorBody.parse(response.body).error.code).toBe(code);
      return ErrorBody.parse(response.body).error;
    };
    for (const url of ['http://10.0.0.5/hook', 'http://127.0.0.2:8080/hook', 'http://169.254.169.254/latest/meta-data', 'https://192.168.1.1/', 'http://100.64.0.1/']) {
      const error = await refused({ url, events: ['*'] }, 'webhook_target_refused', 422);
      expect(error.message).toMatch(/engine's own network/);
    }
    await refused({ url: 'http://no-such-host.invalid/hook', events: ['*'] }, 'webhook_target_refused', 422);
    await refused({ url: 'ftp://example.com/hook', events: ['*'] }, 'invalid_request', 422);
    await refused({ url: 'http://[::1]/hook', events: ['*'] }, 'invalid_request', 422);
    await refused({ url: 'http://0/hook', events: ['*'] }, 'invalid_request', 422);
    await refused({ url: 'http://user:pw@203.0.113.7/hook', events: ['*'] }, 'invalid_request', 422);
    await refused({ url: 'http://203.0.113.7/hook', events: [] }, 'invalid_request', 422);
    await refused({ url: 'http://203.0.113.7/hook', events: ['run.exploded'] }, 'invalid_request', 422);
    await refused({ url: 'http://203.0.113.7/hook', events: ['*'], secret: 'mine' }, 'invalid_request', 422);
    expect((await tenant.api.get('/webhooks')).text).toBe(before);

    const webhook = await createWebhook(tenant.api, { url: 'http://203.0.113.7/hook', events: ['run.failed'] });
    const patchRefused = await tenant.api.patch(`/webhooks/${webhook.id}`, { url: 'http://10.9.9.9/' });
    expect([patchRefused.status, ErrorBody.parse(patchRefused.body).error.code]).toEqual([422, 'webhook_target_refused']);
    expect((await tenant.api.patch(`/webhooks/${webhook.id}`, {})).status).toBe(422);
    expect((await tenant.api.patch(`/webhooks/${webhook.id}`, { enabled: 'yes' })).status).toBe(422);
    expect((await tenant.api.get('/webhooks/not-an-id')).status).toBe(404);
    expect((await tenant.api.get(`/webhooks/whk_${'0'.repeat(26)}`)).status).toBe(404);
    expect((await tenant.api.get(`/webhooks/${webhook.id}/deliveries?limit=0`)).status).toBe(422);
    expect(Webhook.parse((await tenant.api.get(`/webhooks/${webhook.id}`)).body.data)).toEqual(Webhook.parse({ ...webhook, secret: undefined }));
    expect((await tenant.api.delete(`/webhooks/${webhook.id}`)).status).toBe(200);
    expect((await tenant.api.delete(`/webhooks/${webhook.id}`)).status).toBe(404);
  });

  it("refuses a target on the engine host's own subnet, not only its exact address, at create and at update", async () => {
    // A neighbour on each of the host's IPv4 subnets (its own address with the last bit flipped), which no private range covers here.
    const neighbours = Object.values(networkInterfaces())
      .flat()
      .filter((address) => address && !address.internal && address.family === 'IPv4' && Number(address.cidr!.split('/')[1]) <= 30)
      .map((address) => address!.address.replace(/\d+$/, (last) => String(Number(last) ^ 1)));
    expect(neighbours.length).toBeGreaterThan(0);
    const before = (await tenant.api.get('/webhooks')).text;
    for (const neighbour of neighbours) {
      const created = await tenant.api.post('/webhooks', { url: `http://${neighbour}:8080/hook`, events: ['*'] });
      expect([neighbour, created.status, ErrorBody.parse(created.body).error.code]).toEqual([neighbour, 422, 'webhook_target_refused']);
      expect(ErrorBody.parse(created.body).error.message).toMatch(/engine host's addresses and subnets/);
    }
    expect((await tenant.api.get('/webhooks')).text).toBe(before);
    const webhook = await createWebhook(tenant.api, { url: 'http://203.0.113.7/hook', events: ['run.failed'] });
    const patched = await tenant.api.patch(`/webhooks/${webhook.id}`, { url: `http://${neighbours[0]}/hook` });
    expect([patched.status, ErrorBody.parse(patched.body).error.code]).toEqual([422, 'webhook_target_refused']);
    expect(Webhook.parse((await tenant.api.get(`/webhooks/${webhook.id}`)).body.data).url).toBe('http://203.0.113.7/hook');
    expect((await tenant.api.delete(`/webhooks/${webhook.id}`)).status).toBe(200);
  });

  it("another tenant can reach none of a tenant's webhooks, and its own webhook never gets the tenant's events", async () => {
    const webhook = await createWebhook(tenant.api, { url: receiver.url('/mine'), events: ['*'] });
    const theirs = await createWebhook(other.api, { url: receiver.url('/theirs'), events: ['*'] });
    for (const [method, path, body] of [
      ['GET', `/webhooks/${webhook.id}`],
      ['PATCH', `/webhooks/${webhook.id}`, { enabled: false }],
      ['POST', `/webhooks/${webhook.id}/test`],
      ['POST', `/webhooks/${webhook.id}/secret/rotate`],
      ['GET', `/webhooks/${webhook.id}/deliveries`],
      ['DELETE', `/webhooks/${webhook.id}`],
    ] as const) {
      const response = await other.api.request(method, path, body === undefined ? {} : { json: body });
      expect([method, path, response.status]).toEqual([method, path, 404]);
    }
    expect(((await other.api.get('/webhooks')).body.data as Webhook[]).map((row) => row.id)).toEqual([theirs.id]);
    expect(Webhook.parse((await tenant.api.get(`/webhooks/${webhook.id}`)).body.data).enabled).toBe(true);

    const name = await newEnvironment();
    const marker = await tenant.api.post(`/webhooks/${webhook.id}/test`);
    await receiver.waitFor('/mine', (deliveries) => deliveries.some((delivery) => delivery.headers['webhook-id'] === marker.body.data.event_id));
    const mine = receiver.at('/mine').map((delivery) => bodyOf(delivery).data);
    expect(mine.some((event) => event.environment === name)).toBe(true);
    // The other tenant's webhook, subscribed to everything, got none of these.
    const mineIds = new Set(mine.map((event) => event.id));
    expect(receiver.at('/theirs').filter((delivery) => mineIds.has(String(delivery.headers['webhook-id'])))).toEqual([]);
    expect(receiver.at('/theirs').every((delivery) => bodyOf(delivery).data.subject.id !== webhook.id)).toBe(true);
    expect((await tenant.api.delete(`/webhooks/${webhook.id}`)).status).toBe(200);
  });

  it('never carries a secret value: a canary written through the API is in no delivery body (and the scan finds it where it is)', async () => {
    const name = await newEnvironment();
    await createWebhook(tenant.api, { url: receiver.url('/canary'), events: ['secret.*', 'binding.*'], environment: name });
    const canary = `canary-${Math.random().toString(36).slice(2)}-webhook`;
    const written = await tenant.api.put(`/environments/${name}/secrets/pw`, { value: canary });
    expect(written.status, written.text).toBe(201);
    expect((await tenant.api.put(`/environments/${name}/secrets/pw`, { value: `${canary}-2` })).status).toBe(200);
    expect((await tenant.api.put(`/environments/${name}/bindings/db`, { secret_refs: { password: 'pw' } })).status).toBeLessThan(300);
    const received = await receiver.waitFor('/canary', (deliveries) => deliveries.length >= 3);
    expect(typesOf(received)).toEqual(['secret.created', 'secret.rotated', 'binding.set']);
    const scan = (texts: string[]) => texts.filter((text) => text.includes(canary));
    expect(scan(received.map((delivery) => `${JSON.stringify(delivery.headers)}\n${delivery.body}`))).toEqual([]);
    // Positive control: the same scan finds the canary in the request that carried it.
    expect(scan([JSON.stringify({ value: canary })])).toHaveLength(1);
  });
});

describe('webhooks on a stack of their own: one delivery worker, and DNS the test answers', () => {
  let own: TestStack;
  let dns: TestDnsServer;
  let tenant: TestTenant;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    dns = await TestDnsServer.start();
    receiver = await WebhookReceiver.start();
    // Its own Redis too: the shared stack's placement-service takes the webhook queue's jobs of the Redis it uses.
    own = await startTestStack({
      mongoUrl: stack.mongoUrl,
      temporalAddress: stack.temporalAddress,
      env: { ...WEBHOOK_TEST_SETTINGS, WEBHOOK_DNS_SERVERS: dns.address, WEBHOOK_DELIVERY_CONCURRENCY: '1' },
    });
    tenant = await createTenant(own.info, 'webhooks-own');
  });

  afterAll(async () => {
    await own?.stop();
    await receiver?.close();
    await dns?.close();
  });

  it("a stream with a long backlog to a slow receiver takes turns with the others: another environment's event does not wait for it all", async () => {
    receiver.slow('/backlog', 250);
    const lake = join(own.info.dataDir, 'lake', tenant.tenantId);
    for (const name of ['busy', 'quiet']) expect((await tenant.api.post('/environments', { name, storage_prefix: `file://${lake}-${name}`, executor: 'local' })).status).toBe(201);
    await createWebhook(tenant.api, { url: receiver.url('/backlog'), events: ['environment.updated'], environment: 'busy' });
    const quiet = await createWebhook(tenant.api, { url: receiver.url('/quiet'), events: ['webhook.test'] });
    const backlog = 16;
    for (let runs = 1; runs <= backlog; runs += 1) expect((await tenant.api.patch('/environments/busy', { max_concurrent_runs: runs })).status).toBe(200);
    expect((await tenant.api.post(`/webhooks/${quiet.id}/test`)).status).toBe(202);
    await receiver.waitFor('/backlog', (deliveries) => deliveries.length >= backlog, 30_000);
    await receiver.waitFor('/quiet', (deliveries) => deliveries.length >= 1, 30_000);
    // One worker slot: the quiet stream's delivery went between the busy stream's, not after them all.
    const order = receiver.received.filter((delivery) => delivery.path === '/backlog' || delivery.path === '/quiet').map((delivery) => delivery.path);
    expect(order.indexOf('/quiet')).toBeLessThan(order.lastIndexOf('/backlog'));
    // And the busy stream stayed in order across its turns.
    expect(receiver.at('/backlog')).toHaveLength(backlog);
    const ids = receiver.at('/backlog').map((delivery) => String(delivery.headers['webhook-id']));
    expect(ids).toEqual([...ids].sort());
  });

  it('accepts the name while it resolves to a public address, then refuses each delivery once it resolves to a private one', async () => {
    dns.records.set('hooks.tenant.test', '10.20.30.40');
    const early = await tenant.api.post('/webhooks', { url: 'http://hooks.tenant.test/receive', events: ['*'] });
    expect([early.status, ErrorBody.parse(early.body).error.code]).toEqual([422, 'webhook_target_refused']);
    dns.records.set('hooks.tenant.test', '203.0.113.80');
    const created = await tenant.api.post('/webhooks', { url: 'http://hooks.tenant.test/receive', events: ['webhook.*'] });
    expect(created.status, created.text).toBe(201);
    const webhook = WebhookCreated.parse(created.body.data);
    dns.records.set('hooks.tenant.test', '10.20.30.40');
    const test = await tenant.api.post(`/webhooks/${webhook.id}/test`);
    expect(test.status).toBe(202);
    const [delivery] = await until(() => deliveriesOf(tenant.api, webhook.id), (rows) => rows[0]?.attempts.length === TEST_TRIES, 30_000, 200);
    expect(delivery).toMatchObject({ event_type: 'webhook.test', status: 'failed' });
    for (const attempt of delivery!.attempts) {
      expect(attempt.status_code).toBeNull();
      expect(attempt.error).toMatch(/^refused: hooks\.tenant\.test: 10\.20\.30\.40 is on the engine's own network/);
    }
  });
});
