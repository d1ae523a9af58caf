import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ErrorBody } from '@envengine/contracts';
import { createTenant, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

describe('a second tenant cannot see or touch the first one\'s environments', () => {
  let owner: TestTenant;
  let intruder: TestTenant;
  let original: unknown;

  beforeAll(async () => {
    owner = await createTenant(stack, 'owner');
    intruder = await createTenant(stack, 'intruder');
    original = (await owner.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/owner/prod', executor: 'local' })).body;
  });

  it.each([
    ['GET', '/environments/prod', undefined],
    ['POST', '/environments/prod/placement', { executor: 'remote' }],
    ['POST', '/environments/prod/schedules/pause', { reason: 'mine now' }],
    ['POST', '/environments/prod/schedules/resume', {}],
  ])('%s %s is 404, exactly as for a missing environment', async (method, path, json) => {
    const response = await intruder.api.request(method, path, json === undefined ? {} : { json });
    expect(response.status).toBe(404);
    expect(ErrorBody.parse(response.body).error.code).toBe('not_found');
    const missing = await intruder.api.request(method, path.replace('prod', 'no-such-env'), json === undefined ? {} : { json });
    expect(missing.status).toBe(404);
    expect(response.body.error.message.replace('prod', 'X')).toBe(missing.body.error.message.replace('no-such-env', 'X'));
    expect((await owner.api.get('/environments/prod')).body).toEqual(original);
  });

  it('lists only the caller\'s environments', async () => {
    expect((await intruder.api.get('/environments')).body).toEqual({ data: [] });
    expect((await owner.api.get('/environments')).body.data).toHaveLength(1);
  });

  it('applies all-environment placement to the caller\'s environments only', async () => {
    const placed = await intruder.api.post('/placement', { executor: 'remote' });
    expect(placed.body).toEqual({ data: { executor: 'remote', environments: [] } });
    expect((await owner.api.get('/environments/prod')).body).toEqual(original);
  });
});
