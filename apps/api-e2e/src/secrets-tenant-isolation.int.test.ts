import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ErrorBody } from '@envengine/contracts';
import { callResolve, createTenant, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

describe('a second tenant cannot see or touch the first one\'s secrets and bindings', () => {
  let owner: TestTenant;
  let intruder: TestTenant;
  let environmentId: string;
  let secretsBefore: unknown;
  let bindingsBefore: unknown;

  beforeAll(async () => {
    owner = await createTenant(stack, 'owner');
    intruder = await createTenant(stack, 'intruder');
    environmentId = (await owner.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/o/p', executor: 'local' })).body.data.id;
    await owner.api.put('/environments/prod/secrets/db-password', { value: 'owner-only' });
    await owner.api.put('/environments/prod/bindings/warehouse', { config: { host: 'db' }, secret_refs: { password: 'db-password' } });
    secretsBefore = (await owner.api.get('/environments/prod/secrets')).body;
    bindingsBefore = (await owner.api.get('/environments/prod/bindings')).body;
  });

  it.each([
    ['GET', '/environments/prod/secrets', undefined],
    ['PUT', '/environments/prod/secrets/db-password', { value: 'overwritten' }],
    ['DELETE', '/environments/prod/secrets/db-password', undefined],
    ['GET', '/environments/prod/bindings', undefined],
    ['PUT', '/environments/prod/bindings/warehouse', { config: { host: 'evil' } }],
    ['DELETE', '/environments/prod/bindings/warehouse', undefined],
  ])('%s %s is 404, exactly as for a missing environment, and changes nothing', async (method, path, json) => {
    const response = await intruder.api.request(method, path, json === undefined ? {} : { json });
    expect(response.status).toBe(404);
    expect(ErrorBody.parse(response.body).error.code).toBe('not_found');
    const missing = await intruder.api.request(method, path.replace('prod', 'no-such-env'), json === undefined ? {} : { json });
    expect(missing.status).toBe(404);
    expect(response.body.error.message.replace('prod', 'X')).toBe(missing.body.error.message.replace('no-such-env', 'X'));
    expect((await owner.api.get('/environments/prod/secrets')).body).toEqual(secretsBefore);
    expect((await owner.api.get('/environments/prod/bindings')).body).toEqual(bindingsBefore);
  });

  it('an environment of the same name of its own shows none of the owner\'s', async () => {
    await intruder.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/i/p', executor: 'local' });
    expect((await intruder.api.get('/environments/prod/secrets')).body).toEqual({ data: [] });
    expect((await intruder.api.get('/environments/prod/bindings')).body).toEqual({ data: [] });
    expect((await intruder.api.delete('/environments/prod/secrets/db-password')).status).toBe(404);
    // Its binding cannot name the owner's secret either.
    const bound = await intruder.api.put('/environments/prod/bindings/warehouse', { secret_refs: { password: 'db-password' } });
    expect(bound.status).toBe(422);
    expect(bound.body.error.code).toBe('unknown_secret');
    expect((await owner.api.get('/environments/prod/secrets')).body).toEqual(secretsBefore);
  });

  it('resolution under another tenant\'s id finds nothing', async () => {
    const response = await callResolve(stack, { tenantId: intruder.tenantId, body: { environment_id: environmentId, binding: 'warehouse' } });
    expect(response.status).toBe(404);
    expect(response.text).not.toContain('owner-only');
  });
});
