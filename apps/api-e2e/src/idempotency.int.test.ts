import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ErrorBody } from '@envengine/contracts';
import { createTenant, uniqueName, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

describe('Idempotency-Key on POST', () => {
  let tenant: TestTenant;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'idempotency');
  });

  it('replays the first status and body for a repeat with the same key and body', async () => {
    const key = uniqueName('key');
    const body = { name: uniqueName('env'), storage_prefix: `s3://lake/p/${uniqueName('p')}`, executor: 'local' };
    const first = await tenant.api.post('/environments', body, { headers: { 'idempotency-key': key } });
    expect(first.status).toBe(201);
    // Same meaning, other key order: the same request.
    const reordered = { executor: 'local', storage_prefix: body.storage_prefix, name: body.name };
    const repeat = await tenant.api.post('/environments', reordered, { headers: { 'idempotency-key': key } });
    expect(repeat.status).toBe(201);
    expect(repeat.body).toEqual(first.body);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    const list = await tenant.api.get('/environments');
    expect(list.body.data.filter((environment: { name: string }) => environment.name === body.name)).toHaveLength(1);
  });

  it('refuses the same key with a different body, and changes nothing', async () => {
    const key = uniqueName('key');
    const name = uniqueName('env');
    await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/p/${name}`, executor: 'local' }, { headers: { 'idempotency-key': key } });
    const before = await tenant.api.get('/environments');
    const reused = await tenant.api.post('/environments', { name: uniqueName('other'), storage_prefix: `s3://lake/p/${uniqueName('p')}`, executor: 'local' }, { headers: { 'idempotency-key': key } });
    expect(reused.status).toBe(422);
    expect(ErrorBody.parse(reused.body).error.code).toBe('idempotency_key_reused');
    const elsewhere = await tenant.api.post('/placement', { executor: 'remote' }, { headers: { 'idempotency-key': key } });
    expect(elsewhere.status).toBe(422);
    expect((await tenant.api.get('/environments')).body).toEqual(before.body);
  });

  it('replays an error answer too, since the request was handled', async () => {
    const key = uniqueName('key');
    const taken = uniqueName('env');
    await tenant.api.post('/environments', { name: taken, storage_prefix: `s3://lake/p/${taken}`, executor: 'local' });
    const body = { name: taken, storage_prefix: 's3://lake/q', executor: 'local' };
    const first = await tenant.api.post('/environments', body, { headers: { 'idempotency-key': key } });
    expect(first.status).toBe(409);
    const repeat = await tenant.api.post('/environments', body, { headers: { 'idempotency-key': key } });
    expect(repeat.status).toBe(409);
    expect(repeat.body).toEqual(first.body);
  });

  it('keeps keys apart between tenants', async () => {
    const other = await createTenant(stack, 'idempotency-other');
    const key = uniqueName('shared-key');
    const body = { name: 'prod', storage_prefix: 's3://lake/p', executor: 'local' };
    const mine = await tenant.api.post('/environments', { ...body, name: uniqueName('prod'), storage_prefix: `s3://lake/p/${uniqueName('p')}` }, { headers: { 'idempotency-key': key } });
    const theirs = await other.api.post('/environments', body, { headers: { 'idempotency-key': key } });
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
  });

  it('runs concurrent repeats once', async () => {
    const key = uniqueName('key');
    const name = uniqueName('env');
    const responses = await Promise.all(
      Array.from({ length: 5 }, () =>
        tenant.api.post('/environments', { name, storage_prefix: `s3://lake/p/${name}`, executor: 'local' }, { headers: { 'idempotency-key': key } }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(responses.map((response) => response.body.data.id)).size).toBe(1);
  });

  it.each([['a'.repeat(256)], ['has space'], ['']])('refuses the key %j with 422 invalid_request', async (key) => {
    const name = uniqueName('env');
    const response = await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/p/${name}`, executor: 'local' }, { headers: { 'idempotency-key': key } });
    expect(response.status).toBe(422);
    expect(ErrorBody.parse(response.body).error.code).toBe('invalid_request');
    expect((await tenant.api.get(`/environments/${name}`)).status).toBe(404);
  });

  it('accepts a key of 255 characters', async () => {
    const response = await tenant.api.post('/environments', { name: uniqueName('env'), storage_prefix: `s3://lake/p/${uniqueName('p')}`, executor: 'local' }, { headers: { 'idempotency-key': 'k'.repeat(255) } });
    expect(response.status).toBe(201);
  });
});
