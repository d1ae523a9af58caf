import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Environment, EnvironmentListResponse, EnvironmentResponse, ErrorBody, PlacementResponse } from '@envengine/contracts';
import { createTenant, uniqueName, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

describe('environments through the gateway', () => {
  let tenant: TestTenant;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'environments');
  });

  it('creates an environment with every field present and defaults applied', async () => {
    const name = uniqueName('prod');
    const created = await tenant.api.post('/environments', { name, storage_prefix: 's3://lake/prod', executor: 'local' });
    expect(created.status).toBe(201);
    expect(created.headers.get('content-type')).toMatch(/^application\/json/);
    const environment = EnvironmentResponse.parse(created.body).data;
    expect(environment).toEqual({
      id: expect.stringMatching(/^env_[0-9a-z]{26}$/),
      name,
      kind: 'persistent',
      git_ref: null,
      storage_prefix: 's3://lake/prod',
      strict: false,
      schedules_paused: false,
      schedules_paused_reason: null,
      executor: 'local',
      egress: 'none',
      active_deployment_id: null,
      status: 'active',
      ttl_hours: null,
      idle_ttl_hours: null,
      expires_at: null,
      max_concurrent_runs: null,
      purge_data_on_expiry: true,
      parent: null,
      inserted_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    for (const field of ['id', 'name', 'kind', 'git_ref', 'storage_prefix', 'strict', 'schedules_paused', 'executor', 'egress', 'active_deployment_id', 'status', 'expires_at', 'purge_data_on_expiry', 'inserted_at']) {
      expect(environment).toHaveProperty(field);
    }

    const read = await tenant.api.get(`/environments/${name}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ data: environment });
  });

  it('takes kind and strict when given', async () => {
    const name = uniqueName('preview');
    const created = await tenant.api.post('/environments', {
      name,
      storage_prefix: 's3://lake/previews/pr-1',
      executor: 'remote',
      kind: 'preview',
      strict: true,
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ name, kind: 'preview', strict: true, executor: 'remote' });
  });

  it("takes a file:// storage prefix only under the engine's storage root, and names the root when it refuses", async () => {
    const root = join(stack.dataDir, 'lake');
    const inside = uniqueName('lake');
    const accepted = await tenant.api.post('/environments', { name: inside, storage_prefix: `file://${root}/${tenant.tenantId}/${inside}`, executor: 'local' });
    expect(accepted.status).toBe(201);
    const listedBefore = (await tenant.api.get('/environments')).body.data.length;
    for (const prefix of ['file:///etc/envengine', `file://${stack.dataDir}`, `file://${root}-other/x`, `file://${root}/../escape`, `file://${root}/a/%2e%2e/%2e%2e/b`]) {
      const refused = await tenant.api.post('/environments', { name: uniqueName('outside'), storage_prefix: prefix, executor: 'local' });
      expect([prefix, refused.status]).toEqual([prefix, 422]);
      const { error } = ErrorBody.parse(refused.body);
      expect(error.code).toBe('invalid_request');
      expect(error.details.map((detail) => detail.path)).toEqual(['storage_prefix']);
      if (!prefix.includes('%2e') && !prefix.includes('..')) expect(error.message).toContain(`file://${root}/`);
    }
    expect((await tenant.api.get('/environments')).body.data.length).toBe(listedBefore);
  });

  it('refuses, at create, a storage prefix no driver can use: no scheme, or a scheme other than file:// and s3://', async () => {
    const listedBefore = (await tenant.api.get('/environments')).body.data.length;
    for (const [prefix, reason] of [
      ['/tmp/x', 'has no scheme'],
      ['lake/prod', 'has no scheme'],
      ['gs://bucket/prod', 'has the scheme gs://, which has no driver'],
    ]) {
      const refused = await tenant.api.post('/environments', { name: uniqueName('scheme'), storage_prefix: prefix, executor: 'local' });
      expect([prefix, refused.status]).toEqual([prefix, 422]);
      const { error } = ErrorBody.parse(refused.body);
      expect(error.code).toBe('invalid_request');
      expect(error.details).toEqual([{ path: 'storage_prefix', message: expect.stringContaining(`${prefix} ${reason}`) }]);
    }
    expect((await tenant.api.get('/environments')).body.data.length).toBe(listedBefore);
  });

  it('lists the caller\'s environments in creation order', async () => {
    const own = await createTenant(stack, 'listing');
    const names = [uniqueName('b'), uniqueName('a'), uniqueName('c')];
    for (const name of names) {
      expect((await own.api.post('/environments', { name, storage_prefix: `s3://lake/p/${name}`, executor: 'local' })).status).toBe(201);
    }
    const list = await own.api.get('/environments');
    expect(list.status).toBe(200);
    const environments = EnvironmentListResponse.parse(list.body).data;
    expect(environments.map((environment) => environment.name)).toEqual(names);
  });

  it('answers 404 not_found for an unknown name', async () => {
    const response = await tenant.api.get(`/environments/${uniqueName('missing')}`);
    expect(response.status).toBe(404);
    expect(ErrorBody.parse(response.body).error.code).toBe('not_found');
  });

  it('answers 409 environment_exists for a taken name and keeps the first', async () => {
    const name = uniqueName('dup');
    const first = await tenant.api.post('/environments', { name, storage_prefix: 's3://lake/first', executor: 'local' });
    const second = await tenant.api.post('/environments', { name, storage_prefix: 's3://lake/second', executor: 'remote' });
    expect(second.status).toBe(409);
    expect(ErrorBody.parse(second.body).error.code).toBe('environment_exists');
    expect((await tenant.api.get(`/environments/${name}`)).body).toEqual(first.body);
  });

  it('sets the executor of one environment', async () => {
    const name = uniqueName('placed');
    await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/x/${name}`, executor: 'local' });
    const placed = await tenant.api.post(`/environments/${name}/placement`, { executor: 'remote' });
    expect(placed.status).toBe(200);
    expect(Environment.parse(placed.body.data).executor).toBe('remote');
    expect((await tenant.api.get(`/environments/${name}`)).body.data.executor).toBe('remote');
    const back = await tenant.api.post(`/environments/${name}/placement`, { executor: 'local' });
    expect(back.body.data.executor).toBe('local');
  });

  it('sets the executor of every environment the caller owns, and of no other', async () => {
    const owner = await createTenant(stack, 'placement-all');
    const bystander = await createTenant(stack, 'bystander');
    const bystanderEnv = (await bystander.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/b', executor: 'local' })).body.data;
    for (const name of ['prod', 'staging']) {
      await owner.api.post('/environments', { name, storage_prefix: `s3://lake/${name}`, executor: 'local' });
    }
    const placed = await owner.api.post('/placement', { executor: 'remote' });
    expect(placed.status).toBe(200);
    const result = PlacementResponse.parse(placed.body).data;
    expect(result.executor).toBe('remote');
    expect(result.environments.map((environment) => [environment.name, environment.executor])).toEqual([
      ['prod', 'remote'],
      ['staging', 'remote'],
    ]);
    expect((await bystander.api.get('/environments/prod')).body.data).toEqual(bystanderEnv);
  });

  it('answers placement for a caller with no environments with an empty list', async () => {
    const empty = await createTenant(stack, 'empty');
    const placed = await empty.api.post('/placement', { executor: 'local' });
    expect(placed.status).toBe(200);
    expect(placed.body).toEqual({ data: { executor: 'local', environments: [] } });
  });

  it('pauses and resumes schedules idempotently, with or without a body', async () => {
    const name = uniqueName('sched');
    await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/x/${name}`, executor: 'local' });

    const paused = await tenant.api.post(`/environments/${name}/schedules/pause`, { reason: 'warehouse maintenance' });
    expect(paused.status).toBe(200);
    expect(paused.body.data).toMatchObject({ schedules_paused: true, schedules_paused_reason: 'warehouse maintenance' });

    const pausedAgain = await tenant.api.post(`/environments/${name}/schedules/pause`);
    expect(pausedAgain.status).toBe(200);
    // A repeat without a reason changes nothing, the reason included.
    expect(pausedAgain.body).toEqual(paused.body);

    const resumed = await tenant.api.post(`/environments/${name}/schedules/resume`, {});
    expect(resumed.status).toBe(200);
    expect(resumed.body.data).toMatchObject({ schedules_paused: false, schedules_paused_reason: null });

    const resumedAgain = await tenant.api.post(`/environments/${name}/schedules/resume`);
    expect(resumedAgain.status).toBe(200);
    expect(resumedAgain.body.data.schedules_paused).toBe(false);

    const pausedEmpty = await tenant.api.post(`/environments/${name}/schedules/pause`, {});
    expect(pausedEmpty.body.data).toMatchObject({ schedules_paused: true, schedules_paused_reason: null });
    expect((await tenant.api.get(`/environments/${name}`)).body.data.schedules_paused).toBe(true);
  });

  it('keeps names unique per caller only: two callers may both own the same name', async () => {
    const first = await createTenant(stack, 'same-a');
    const second = await createTenant(stack, 'same-b');
    const a = await first.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/a', executor: 'local' });
    const b = await second.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/b', executor: 'remote' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.data.id).not.toBe(b.body.data.id);
    expect((await first.api.get('/environments/prod')).body.data.storage_prefix).toBe('s3://lake/a');
    expect((await second.api.get('/environments/prod')).body.data.storage_prefix).toBe('s3://lake/b');
  });
});

describe("file:// storage prefixes are disjoint across tenants", () => {
  let owner: TestTenant;
  let other: TestTenant;
  let base: string;

  beforeAll(async () => {
    owner = await createTenant(stack, 'prefix-owner');
    other = await createTenant(stack, 'prefix-other');
    base = join(stack.dataDir, 'lake', uniqueName('shared'));
    expect((await owner.api.post('/environments', { name: 'prod', storage_prefix: `file://${base}/team/prod`, executor: 'local' })).status).toBe(201);
  });

  it("answers 409 storage_prefix_taken to a prefix that contains, equals or lies inside another tenant's, and changes nothing", async () => {
    const before = (await other.api.get('/environments')).body;
    for (const prefix of [`file://${base}`, `file://${base}/team`, `file://${base}/team/prod`, `file://${base}/team/prod/`, `file://${base}/team/prod/inner`, `file://localhost${base}/team/prod/x`]) {
      const response = await other.api.post('/environments', { name: uniqueName('mine'), storage_prefix: prefix, executor: 'local' });
      const { error } = ErrorBody.parse(response.body);
      expect([prefix, response.status, error.code, error.details.map((detail) => detail.path)]).toEqual([prefix, 409, 'storage_prefix_taken', ['storage_prefix']]);
    }
    expect((await other.api.get('/environments')).body).toEqual(before);
  });

  it('takes a sibling that only shares a name prefix; the owner may not nest one of its own either (storage-bounds.int.test.ts)', async () => {
    expect((await other.api.post('/environments', { name: 'sibling', storage_prefix: `file://${base}/team/prod2`, executor: 'local' })).status).toBe(201);
    expect((await owner.api.post('/environments', { name: 'inner', storage_prefix: `file://${base}/team/prod/inner`, executor: 'local' })).status).toBe(409);
  });

  it('gives one of two tenants racing for overlapping directories its 201, and the other 409', async () => {
    const contested = join(stack.dataDir, 'lake', uniqueName('race'));
    for (let round = 0; round < 5; round++) {
      const [first, second] = await Promise.all([
        owner.api.post('/environments', { name: `race-${round}`, storage_prefix: `file://${contested}/${round}`, executor: 'local' }),
        other.api.post('/environments', { name: `race-${round}`, storage_prefix: `file://${contested}/${round}/deeper`, executor: 'local' }),
      ]);
      expect([first.status, second.status].sort()).toEqual([201, 409]);
    }
  });
});
