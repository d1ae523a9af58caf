import { randomBytes } from 'node:crypto';
import { BSON, MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { EventType } from '@envengine/contracts';
import { createTenant, until, type ApiClient, type ApiResponse, type TestTenant } from '@envengine/test-harness';

import { readEventPages, withoutTokenEvents, type EventPages } from './events-fixtures.ts';

const stack = inject('stack');

/** The tenant's events and pages, but for its API tokens' events (the pages' texts keep them, for the scans). */
async function allEvents(api: ApiClient, query = ''): Promise<EventPages> {
  return withoutTokenEvents(await readEventPages(api, query));
}


const requestIdOf = (response: ApiResponse) => response.headers.get('x-request-id');
const occurrences = (text: string, needle: string) => text.split(needle).length - 1;

/**
 * The secrets scope's changes through the gateway: each writes one event into the
 * secrets-service's outbox in its own transaction, which its relay hands to the audit log;
 * a refusal writes none, and no event carries a secret's value.
 */
describe('events of the secrets scope', () => {
  // Two values written as the secret (create, then rotate); the first is also, on purpose,
  // a binding's name in another environment: the positive control of the scans.
  const [created, rotated] = [`canary-${randomBytes(12).toString('hex')}`, `canary-${randomBytes(12).toString('hex')}`];
  const env = 'vault';
  const secretPath = `/environments/${env}/secrets/db-password`;
  const bindingPath = `/environments/${env}/bindings/warehouse`;
  let tenant: TestTenant;
  let other: TestTenant;
  let mongo: MongoClient;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'events-secrets');
    other = await createTenant(stack, 'events-secrets-other');
    mongo = await MongoClient.connect(stack.mongoUrl);
    for (const name of [env, 'control']) {
      const made = await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/events-secrets/${name}`, executor: 'local' });
      expect(made.status, made.text).toBe(201);
    }
  });

  afterAll(async () => {
    await mongo?.close();
  });

  it('records one event per change, with its actor and request id; a refusal records none; no event holds a value', async () => {
    const api = tenant.api;
    const changes: Array<[EventType, ApiResponse, Record<string, unknown>]> = [];
    const change = async (type: EventType, status: number, request: Promise<ApiResponse>, data: Record<string, unknown>) => {
      const response = await request;
      expect(response.status, `${type}: ${response.text}`).toBe(status);
      changes.push([type, response, data]);
    };
    const refusal = async (what: string, status: number, request: Promise<ApiResponse>) => {
      const response = await request;
      expect(response.status, `${what}: ${response.text}`).toBe(status);
    };

    await change('secret.created', 201, api.put(secretPath, { value: created }), { version: 1 });
    await change('secret.rotated', 200, api.put(secretPath, { value: rotated }), { version: 2 });
    await change('binding.set', 201, api.put(bindingPath, { secret_refs: { password: 'db-password' }, mode: 'read_only' }), { mode: 'read_only', created: true });
    await change('binding.set', 200, api.put(bindingPath, { config: { host: 'db.internal' } }), { mode: 'live', created: false });

    // Refused at the edge of the request and inside the services: none changes anything.
    await refusal('a field off the contract', 422, api.put(secretPath, { value: created, version: 3 }));
    await refusal('a value that is not a string', 422, api.put(secretPath, { value: [created] }));
    await refusal('an unknown environment', 404, api.put(`/environments/nowhere/secrets/db-password`, { value: created }));
    await refusal('a binding of a secret the environment lacks', 422, api.put(bindingPath, { secret_refs: { password: 'missing' } }));
    await refusal('a binding of a bad mode', 422, api.put(bindingPath, { secret_refs: { password: 'db-password' }, mode: created }));
    await refusal('deleting a binding there is not', 404, api.delete(`/environments/${env}/bindings/nothing`));
    await refusal('deleting a secret there is not', 404, api.delete(`/environments/${env}/secrets/nothing`));
    await refusal('another tenant writing', 404, other.api.put(secretPath, { value: created }));

    await change('binding.deleted', 200, api.delete(bindingPath), {});
    await change('secret.deleted', 200, api.delete(secretPath), { version: 2 });

    // The positive control, written last: once its event is in, every earlier one of the
    // scope is (the relay publishes in order), and the scans below must find it.
    const control = await api.put(`/environments/control/bindings/${created}`);
    expect(control.status, control.text).toBe(201);
    const everything = await until(
      () => allEvents(api),
      (pages) => pages.events.some((event) => event.subject.id === created),
      20_000,
      50,
    );
    const controlEvents = everything.events.filter((event) => event.environment === 'control' && event.subject.kind === 'binding');
    expect(controlEvents).toEqual([expect.objectContaining({ type: 'binding.set', subject: { kind: 'binding', id: created }, request_id: requestIdOf(control) })]);

    // No value anywhere: not in what GET /events sent, nor in the scope's outbox, nor in the
    // audit log's rows. Each scan finds the control (the first value as a binding's name) once.
    const outboxRows = await mongo.db(stack.databases['secrets-service']).collection('event_outbox').find({ tenant_id: tenant.tenantId }).toArray();
    const auditRows = await mongo.db(stack.databases['placement-service']).collection('events').find({ tenant_id: tenant.tenantId }).toArray();
    expect(outboxRows.length).toBe(changes.length + 1);
    const scans: Record<string, string[]> = {
      'GET /events pages': everything.pageTexts,
      'GET /events events': everything.rawEvents,
      'secrets-service event_outbox': outboxRows.map((row) => BSON.EJSON.stringify(row)),
      'placement-service events': auditRows.map((row) => BSON.EJSON.stringify(row)),
    };
    for (const [where, texts] of Object.entries(scans)) {
      expect([where, texts.reduce((sum, text) => sum + occurrences(text, created), 0)]).toEqual([where, 1]);
      expect([where, texts.reduce((sum, text) => sum + occurrences(text, rotated), 0)]).toEqual([where, 0]);
    }
    const withValue = everything.rawEvents.filter((text) => text.includes(created));
    expect(withValue).toHaveLength(1);
    expect(JSON.parse(withValue[0]!)).toMatchObject({ environment: 'control', subject: { id: created } });

    // The environment's events, as `?environment=` answers them: its creation, then one per change.
    const { events } = await allEvents(api, `&environment=${env}`);
    expect(events.map((event) => event.type)).toEqual(['environment.created', ...changes.map(([type]) => type)]);
    const scoped = events.slice(1);
    expect(scoped.map((event) => [event.type, event.request_id, event.data])).toEqual(changes.map(([type, response, data]) => [type, requestIdOf(response), data]));
    for (const [, response] of changes) expect(requestIdOf(response)).toMatch(/\S/);
    for (const event of scoped) {
      expect(event.actor).toBe(tenant.tokenId);
      expect(event.environment).toBe(env);
      expect(event.subject).toEqual(event.type.startsWith('secret.') ? { kind: 'secret', id: 'db-password' } : { kind: 'binding', id: 'warehouse' });
    }
    // Exactly one of each secret type; binding.set once per PUT.
    const counts = Object.fromEntries(['secret.created', 'secret.rotated', 'secret.deleted', 'binding.set', 'binding.deleted'].map((type) => [type, scoped.filter((event) => event.type === type).length]));
    expect(counts).toEqual({ 'secret.created': 1, 'secret.rotated': 1, 'secret.deleted': 1, 'binding.set': 2, 'binding.deleted': 1 });

    // Another tenant, with an environment of the same name, sees only its own.
    const own = await other.api.post('/environments', { name: env, storage_prefix: 's3://lake/events-secrets-other/vault', executor: 'local' });
    expect(own.status, own.text).toBe(201);
    const seen = await until(() => allEvents(other.api), (pages) => pages.events.length >= 1, 20_000, 50);
    expect(seen.events.map((event) => [event.type, event.actor, event.request_id])).toEqual([['environment.created', other.tokenId, requestIdOf(own)]]);
    expect((await allEvents(other.api, `&environment=${env}`)).events.map((event) => event.type)).toEqual(['environment.created']);
    expect((await allEvents(other.api, '&subject=db-password')).events).toEqual([]);
    expect((await allEvents(other.api, '&type=secret.*')).events).toEqual([]);
    expect((await allEvents(other.api, '&type=binding.*')).events).toEqual([]);
    expect(seen.pageTexts.join('\n')).not.toContain(created);
  });
});
