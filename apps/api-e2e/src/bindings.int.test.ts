import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Binding, DeletedResource, ErrorBody, dataEnvelope } from '@envengine/contracts';
import { createTenant, type TestTenant } from '@envengine/test-harness';
import { z } from 'zod';

const stack = inject('stack');
const BindingList = dataEnvelope(z.array(Binding));

describe('bindings', () => {
  let tenant: TestTenant;
  const env = 'prod';
  const path = (connection: string) => `/environments/${env}/bindings/${connection}`;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'bindings');
    await tenant.api.post('/environments', { name: env, storage_prefix: 's3://b/prod', executor: 'local' });
    await tenant.api.put(`/environments/${env}/secrets/db-password`, { value: 'pg-secret-value' });
    await tenant.api.put(`/environments/${env}/secrets/api-token`, { value: 'token-secret-value' });
  });

  it('creates a binding with defaults (201) and lists it', async () => {
    const created = await tenant.api.put(path('minimal'));
    expect(created.status).toBe(201);
    const binding = dataEnvelope(Binding).parse(created.body).data;
    expect(binding).toMatchObject({ name: 'minimal', config: {}, secret_refs: {}, mode: 'live', dangling_secret_refs: [] });
    const empty = await tenant.api.put(path('empty-object'), {});
    expect(empty.status).toBe(201);
    expect(empty.body.data.mode).toBe('live');
    const listed = BindingList.parse((await tenant.api.get(`/environments/${env}/bindings`)).body).data;
    expect(listed.map((row) => row.name)).toEqual(expect.arrayContaining(['minimal', 'empty-object']));
  });

  it('keeps config of any JSON shape and secret names, never secret values', async () => {
    const config = { host: 'db.internal', port: 5432, 'dotted.key': true, $dollar: null, nested: { list: [1, 'two'] } };
    const response = await tenant.api.put(path('warehouse'), {
      config,
      secret_refs: { password: 'db-password', token: 'api-token' },
      mode: 'read_only',
    });
    expect(response.status).toBe(201);
    const binding = dataEnvelope(Binding).parse(response.body).data;
    expect(binding).toMatchObject({ name: 'warehouse', config, secret_refs: { password: 'db-password', token: 'api-token' }, mode: 'read_only' });
    expect(response.text).not.toContain('pg-secret-value');
    expect(response.text).not.toContain('token-secret-value');
    const listed = (await tenant.api.get(`/environments/${env}/bindings`)).text;
    expect(listed).not.toContain('pg-secret-value');
  });

  it('PUT replaces the whole binding (200): what is not sent takes its default', async () => {
    await tenant.api.put(path('replaced'), { config: { a: 1, b: 2 }, secret_refs: { password: 'db-password' }, mode: 'read_only' });
    const replaced = await tenant.api.put(path('replaced'), { config: { c: 3 } });
    expect(replaced.status).toBe(200);
    const binding = dataEnvelope(Binding).parse(replaced.body).data;
    expect(binding).toMatchObject({ config: { c: 3 }, secret_refs: {}, mode: 'live' });
    const first = BindingList.parse((await tenant.api.get(`/environments/${env}/bindings`)).body).data.find((row) => row.name === 'replaced');
    expect(first).toEqual(binding);
    expect(Date.parse(binding.updated_at)).toBeGreaterThanOrEqual(Date.parse(binding.inserted_at));
  });

  it('refuses secret_refs naming a secret the environment lacks: 422 unknown_secret, nothing stored', async () => {
    const before = (await tenant.api.get(`/environments/${env}/bindings`)).body;
    const response = await tenant.api.put(path('broken'), { secret_refs: { password: 'db-password', key: 'no-such-secret' } });
    expect(response.status).toBe(422);
    const error = ErrorBody.parse(response.body).error;
    expect(error.code).toBe('unknown_secret');
    expect(error.message).toContain('no-such-secret');
    expect(error.details).toEqual([{ path: 'secret_refs.key', message: expect.stringContaining('no-such-secret') }]);
    expect((await tenant.api.get(`/environments/${env}/bindings`)).body).toEqual(before);
    // Also on a replace: the binding keeps what it had.
    await tenant.api.put(path('kept'), { secret_refs: { password: 'db-password' } });
    const kept = (await tenant.api.get(`/environments/${env}/bindings`)).body;
    expect((await tenant.api.put(path('kept'), { secret_refs: { password: 'gone' } })).status).toBe(422);
    expect((await tenant.api.get(`/environments/${env}/bindings`)).body).toEqual(kept);
  });

  it('shows the refs left dangling when a referenced secret is deleted', async () => {
    await tenant.api.put(`/environments/${env}/secrets/short-lived`, { value: 'v' });
    await tenant.api.put(path('dangles'), { secret_refs: { password: 'db-password', key: 'short-lived' } });
    expect((await tenant.api.delete(`/environments/${env}/secrets/short-lived`)).status).toBe(200);
    const listed = BindingList.parse((await tenant.api.get(`/environments/${env}/bindings`)).body).data;
    expect(listed.find((row) => row.name === 'dangles')).toMatchObject({
      secret_refs: { password: 'db-password', key: 'short-lived' },
      dangling_secret_refs: ['key'],
    });
  });

  it('deletes a binding, answering {data: {name}}; a second DELETE is 404', async () => {
    await tenant.api.put(path('doomed'), { config: { x: 1 } });
    const deleted = await tenant.api.delete(path('doomed'));
    expect(deleted.status).toBe(200);
    expect(dataEnvelope(DeletedResource).parse(deleted.body)).toEqual({ data: { name: 'doomed' } });
    const again = await tenant.api.delete(path('doomed'));
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('not_found');
    const names = BindingList.parse((await tenant.api.get(`/environments/${env}/bindings`)).body).data.map((row) => row.name);
    expect(names).not.toContain('doomed');
  });

  it('answers 404 for an unknown environment, for every verb', async () => {
    for (const [method, target] of [
      ['GET', '/environments/nowhere/bindings'],
      ['PUT', '/environments/nowhere/bindings/a'],
      ['DELETE', '/environments/nowhere/bindings/a'],
    ] as const) {
      const response = await tenant.api.request(method, target, method === 'PUT' ? { json: {} } : {});
      expect(response.status, `${method} ${target}`).toBe(404);
      expect(response.body.error.code).toBe('not_found');
    }
  });

  describe('bad input gets its status and code and changes nothing', () => {
    const cases: Array<[string, { connection?: string; raw?: string; json?: unknown; contentType?: string }, number, string]> = [
      ['a body that is not JSON', { raw: '{"config": ' }, 400, 'invalid_json'],
      ['a JSON body sent as text/plain', { raw: '{}', contentType: 'text/plain' }, 400, 'invalid_json'],
      ['config an array', { json: { config: [1, 2] } }, 422, 'invalid_request'],
      ['config a string', { json: { config: 'host=db' } }, 422, 'invalid_request'],
      ['config null', { json: { config: null } }, 422, 'invalid_request'],
      ['secret_refs an array', { json: { secret_refs: ['db-password'] } }, 422, 'invalid_request'],
      ['a secret_refs value that is not a string', { json: { secret_refs: { password: 7 } } }, 422, 'invalid_request'],
      ['a secret_refs value that is not a secret name', { json: { secret_refs: { password: 'bad name' } } }, 422, 'invalid_request'],
      ['a setting both in config and secret_refs', { json: { config: { password: 'x' }, secret_refs: { password: 'db-password' } } }, 422, 'invalid_request'],
      ['mode outside its enum', { json: { mode: 'write' } }, 422, 'invalid_request'],
      ['mode of the wrong type', { json: { mode: true } }, 422, 'invalid_request'],
      ['an unknown field', { json: { config: {}, name: 'other' } }, 422, 'invalid_request'],
      ['a body that is null', { json: null }, 422, 'invalid_request'],
      ['a connection name with a space', { connection: 'my%20db', json: {} }, 422, 'invalid_request'],
      ['a connection name starting with .', { connection: '.hidden', json: {} }, 422, 'invalid_request'],
    ];

    it.each(cases)('%s', async (_what, input, status, code) => {
      await tenant.api.put(path('stable'), { config: { keep: true }, secret_refs: { password: 'db-password' } });
      const before = (await tenant.api.get(`/environments/${env}/bindings`)).body;
      const response = await tenant.api.request('PUT', path(input.connection ?? 'stable'), {
        ...(input.raw !== undefined ? { raw: input.raw, headers: { 'content-type': input.contentType ?? 'application/json' } } : { json: input.json }),
      });
      expect(response.status).toBe(status);
      expect(ErrorBody.parse(response.body).error.code).toBe(code);
      expect((await tenant.api.get(`/environments/${env}/bindings`)).body).toEqual(before);
    });

    it('details name the offending field', async () => {
      const response = await tenant.api.put(path('stable'), { mode: 'write', secret_refs: { password: 7 }, extra: 1 });
      const paths = ErrorBody.parse(response.body).error.details.map((detail) => detail.path).sort();
      expect(paths).toEqual(['extra', 'mode', 'secret_refs.password']);
    });
  });
});
