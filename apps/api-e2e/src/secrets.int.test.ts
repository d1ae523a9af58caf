import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DeletedResource, ErrorBody, SecretRow, dataEnvelope } from '@envengine/contracts';
import { createTenant, uniqueName, type TestTenant } from '@envengine/test-harness';
import { z } from 'zod';

const stack = inject('stack');
const SecretList = dataEnvelope(z.array(SecretRow));

describe('secrets', () => {
  let tenant: TestTenant;
  let mongo: MongoClient;
  const env = 'prod';
  const secretsDb = () => mongo.db(stack.databases['secrets-service']);

  beforeAll(async () => {
    tenant = await createTenant(stack, 'secrets');
    mongo = await new MongoClient(stack.mongoUrl).connect();
    expect((await tenant.api.post('/environments', { name: env, storage_prefix: 's3://b/prod', executor: 'local' })).status).toBe(201);
  });
  afterAll(async () => {
    await mongo?.close();
  });

  it('creates version 1 with 201, rotates to version 2 with 200, and never answers the value', async () => {
    const name = uniqueName('db-pass');
    const created = await tenant.api.put(`/environments/${env}/secrets/${name}`, { value: 'first-value' });
    expect(created.status).toBe(201);
    const row = dataEnvelope(SecretRow).parse(created.body).data;
    expect(row).toMatchObject({ name, backend: 'local', version: 1 });
    expect(created.text).not.toContain('first-value');

    const rotated = await tenant.api.put(`/environments/${env}/secrets/${name}`, { value: 'second-value' });
    expect(rotated.status).toBe(200);
    const rotatedRow = dataEnvelope(SecretRow).parse(rotated.body).data;
    expect(rotatedRow.version).toBe(2);
    expect(Date.parse(rotatedRow.rotated_at)).toBeGreaterThanOrEqual(Date.parse(row.rotated_at));
    expect(rotated.text).not.toContain('second-value');

    const listed = SecretList.parse((await tenant.api.get(`/environments/${env}/secrets`)).body).data;
    expect(listed.find((secret) => secret.name === name)).toEqual(rotatedRow);
  });

  it('lists rows with name, backend, version, rotated_at and inherited_from only, sorted by name', async () => {
    const other = await createTenant(stack, 'secrets-list');
    await other.api.post('/environments', { name: 'e', storage_prefix: 's3://lake/p', executor: 'local' });
    expect((await other.api.get('/environments/e/secrets')).body).toEqual({ data: [] });
    await other.api.put('/environments/e/secrets/b', { value: 'x' });
    await other.api.put('/environments/e/secrets/a', { value: 'y' });
    const listed = (await other.api.get('/environments/e/secrets')).body.data as Array<Record<string, unknown>>;
    expect(listed.map((row) => row.name)).toEqual(['a', 'b']);
    for (const row of listed) expect(Object.keys(row).sort()).toEqual(['backend', 'inherited_from', 'name', 'rotated_at', 'version']);
  });

  it('stores only ciphertext: the value is in no document of the secrets database', async () => {
    const name = uniqueName('stored');
    const value = `plain-${uniqueName('v')}`;
    await tenant.api.put(`/environments/${env}/secrets/${name}`, { value });
    const versions = await secretsDb().collection('local_secret_versions').find({}).toArray();
    expect(versions.length).toBeGreaterThan(0);
    expect(JSON.stringify(versions)).not.toContain(value);
    const row = await secretsDb().collection('secrets').findOne({ name });
    expect(row).toMatchObject({ backend: 'local', name, version: 1, tenant_id: tenant.tenantId });
    expect(JSON.stringify(row)).not.toContain(value);
    const stored = await secretsDb().collection('local_secret_versions').findOne({ secret_id: row!._id, version: 1 });
    expect(stored).toMatchObject({ tenant_id: tenant.tenantId });
    expect(JSON.stringify(stored)).not.toContain(value);
  });

  it('retires a secret: every stored version is destroyed, the row is removed, a second DELETE is 404', async () => {
    const name = uniqueName('retire');
    for (const value of ['v1', 'v2', 'v3']) await tenant.api.put(`/environments/${env}/secrets/${name}`, { value });
    const row = await secretsDb().collection('secrets').findOne({ name });
    expect(await secretsDb().collection('local_secret_versions').countDocuments({ secret_id: row!._id })).toBe(3);

    const deleted = await tenant.api.delete(`/environments/${env}/secrets/${name}`);
    expect(deleted.status).toBe(200);
    expect(dataEnvelope(DeletedResource).parse(deleted.body)).toEqual({ data: { name } });
    expect(await secretsDb().collection('local_secret_versions').countDocuments({ secret_id: row!._id })).toBe(0);
    expect(await secretsDb().collection('secrets').countDocuments({ _id: row!._id })).toBe(0);
    expect(await secretsDb().collection('secret_audit').countDocuments({ kind: 'retire', secret_id: row!._id })).toBe(1);

    const again = await tenant.api.delete(`/environments/${env}/secrets/${name}`);
    expect(again.status).toBe(404);
    expect(ErrorBody.parse(again.body).error.code).toBe('not_found');
    const listed = SecretList.parse((await tenant.api.get(`/environments/${env}/secrets`)).body).data;
    expect(listed.map((secret) => secret.name)).not.toContain(name);

    // Written again, it starts over at version 1, under a new id.
    const recreated = await tenant.api.put(`/environments/${env}/secrets/${name}`, { value: 'anew' });
    expect(recreated.status).toBe(201);
    expect(recreated.body.data.version).toBe(1);
  });

  it('DELETEs racing PUTs of one secret leave it whole or gone: never a row without its values, or values without a row', async () => {
    const name = uniqueName('racing');
    await tenant.api.put(`/environments/${env}/secrets/${name}`, { value: 'start' });
    const responses = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        i % 3 === 0
          ? tenant.api.delete(`/environments/${env}/secrets/${name}`)
          : tenant.api.put(`/environments/${env}/secrets/${name}`, { value: `racing-${i}` }),
      ),
    );
    for (const response of responses) expect([200, 201, 404]).toContain(response.status);
    const deletes = responses.filter((response, i) => i % 3 === 0 && response.status === 200).length;
    expect(deletes).toBeGreaterThan(0);

    const rows = await secretsDb().collection('secrets').find({ tenant_id: tenant.tenantId, name }).toArray();
    expect(rows.length).toBeLessThanOrEqual(1);
    const versions = await secretsDb().collection('local_secret_versions').find({ tenant_id: tenant.tenantId }).toArray();
    const retired = await secretsDb().collection('secret_audit').find({ tenant_id: tenant.tenantId, kind: 'retire', secret: name }).toArray();
    // Every successful DELETE retired exactly one incarnation, whose values are all gone.
    expect(retired).toHaveLength(deletes);
    for (const record of retired) expect(versions.filter((version) => version.secret_id === record.secret_id)).toHaveLength(0);
    if (rows[0]) {
      // The surviving incarnation holds exactly versions 1..current.
      const mine = versions.filter((version) => version.secret_id === rows[0]!._id).map((version) => version.version as number);
      expect(mine.sort((a, b) => a - b)).toEqual(Array.from({ length: rows[0].version as number }, (_, i) => i + 1));
      const listed = SecretList.parse((await tenant.api.get(`/environments/${env}/secrets`)).body).data;
      expect(listed.find((secret) => secret.name === name)?.version).toBe(rows[0].version);
    }
  });

  it('concurrent PUTs of one secret never lose a version: 1..N, no gaps, no duplicates', async () => {
    const name = uniqueName('contended');
    const writers = 16;
    const responses = await Promise.all(
      Array.from({ length: writers }, (_, i) => tenant.api.put(`/environments/${env}/secrets/${name}`, { value: `value-${i}` })),
    );
    const versions = responses.map((response) => {
      expect([200, 201]).toContain(response.status);
      return response.body.data.version as number;
    });
    expect([...versions].sort((a, b) => a - b)).toEqual(Array.from({ length: writers }, (_, i) => i + 1));
    expect(responses.filter((response) => response.status === 201)).toHaveLength(1);
    const listed = SecretList.parse((await tenant.api.get(`/environments/${env}/secrets`)).body).data;
    expect(listed.find((secret) => secret.name === name)?.version).toBe(writers);
    const row = await secretsDb().collection('secrets').findOne({ name });
    const stored = await secretsDb().collection('local_secret_versions').find({ secret_id: row!._id }).toArray();
    expect(stored.map((doc) => doc.version).sort((a, b) => a - b)).toEqual(Array.from({ length: writers }, (_, i) => i + 1));
  });

  it('accepts a value of exactly 64 KiB and the empty string', async () => {
    const name = uniqueName('sizes');
    expect((await tenant.api.put(`/environments/${env}/secrets/${name}`, { value: 'x'.repeat(64 * 1024) })).status).toBe(201);
    expect((await tenant.api.put(`/environments/${env}/secrets/${name}`, { value: '' })).status).toBe(200);
  });

  it('answers 404 for an unknown environment, for every verb', async () => {
    for (const [method, path, json] of [
      ['GET', '/environments/no-such-env/secrets', undefined],
      ['PUT', '/environments/no-such-env/secrets/a', { value: 'v' }],
      ['DELETE', '/environments/no-such-env/secrets/a', undefined],
    ] as const) {
      const response = await tenant.api.request(method, path, json ? { json } : {});
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(ErrorBody.parse(response.body).error.code).toBe('not_found');
    }
  });

  describe('bad input gets its status and code and changes nothing', () => {
    const existing = 'api-key';

    beforeAll(async () => {
      await tenant.api.put(`/environments/${env}/secrets/${existing}`, { value: 'original' });
    });

    const cases: Array<[string, { path?: string; raw?: string; json?: unknown; contentType?: string }, number, string]> = [
      ['a body that is not JSON', { raw: '{"value": "x"' }, 400, 'invalid_json'],
      ['a JSON body sent as text/plain', { raw: '{"value":"x"}', contentType: 'text/plain' }, 400, 'invalid_json'],
      ['no body', { raw: '' }, 400, 'invalid_json'],
      ['value missing', { json: {} }, 422, 'invalid_request'],
      ['value a number', { json: { value: 42 } }, 422, 'invalid_request'],
      ['value null', { json: { value: null } }, 422, 'invalid_request'],
      ['value an object', { json: { value: { nested: 'x' } } }, 422, 'invalid_request'],
      ['value over 64 KiB', { json: { value: 'x'.repeat(64 * 1024 + 1) } }, 422, 'invalid_request'],
      ['value over 64 KiB in UTF-8 bytes', { json: { value: 'é'.repeat(32 * 1024 + 1) } }, 422, 'invalid_request'],
      ['an unknown field', { json: { value: 'x', version: 9 } }, 422, 'invalid_request'],
      ['a body that is an array', { json: [{ value: 'x' }] }, 422, 'invalid_request'],
      ['a secret name with a space', { path: 'bad%20name', json: { value: 'x' } }, 422, 'invalid_request'],
      ['a secret name with a slash', { path: 'a%2Fb', json: { value: 'x' } }, 422, 'invalid_request'],
      ['a secret name of 64 characters', { path: 'a'.repeat(64), json: { value: 'x' } }, 422, 'invalid_request'],
      ['a secret name starting with a dot', { path: '.hidden', json: { value: 'x' } }, 422, 'invalid_request'],
    ];

    it.each(cases)('%s', async (_what, input, status, code) => {
      const before = (await tenant.api.get(`/environments/${env}/secrets`)).body;
      const path = `/environments/${env}/secrets/${input.path ?? existing}`;
      const response = await tenant.api.request('PUT', path, {
        ...(input.json !== undefined ? { json: input.json } : { raw: input.raw }),
        headers: input.contentType || input.raw !== undefined ? { 'content-type': input.contentType ?? 'application/json' } : {},
      });
      expect(response.status).toBe(status);
      const error = ErrorBody.parse(response.body).error;
      expect(error.code).toBe(code);
      expect(response.text).not.toContain('xxxxxxxx');
      expect((await tenant.api.get(`/environments/${env}/secrets`)).body).toEqual(before);
    });

    it('a bad environment name is 422 for every verb', async () => {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const path = method === 'GET' ? '/environments/-bad-name/secrets' : '/environments/-bad-name/secrets/a';
        const response = await tenant.api.request(method, path, method === 'PUT' ? { json: { value: 'v' } } : {});
        expect(response.status, method).toBe(422);
        expect(response.body.error.code).toBe('invalid_request');
      }
    });

    it('a body over the JSON limit is 413', async () => {
      const before = (await tenant.api.get(`/environments/${env}/secrets`)).body;
      const response = await tenant.api.put(`/environments/${env}/secrets/${existing}`, { value: 'x'.repeat(1024 * 1024 + 10) });
      expect(response.status).toBe(413);
      expect(response.body.error.code).toBe('payload_too_large');
      expect((await tenant.api.get(`/environments/${env}/secrets`)).body).toEqual(before);
    });
  });
});
