import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Deployment, ErrorBody, dataEnvelope } from '@envengine/contracts';
import { createTenant, makeBundle, manifestOf, uniqueName, type TestTenant, until, workflowsOf } from '@envengine/test-harness';
import { z } from 'zod';

const stack = inject('stack');
const DeploymentList = dataEnvelope(z.array(Deployment));

describe('deployments: ingest, reads and activation', () => {
  let tenant: TestTenant;
  let bundleRef: string;
  const env = 'prod';
  const assets = [
    { key: 'raw_orders', columns: [{ name: 'id', type: 'integer' }, { name: 'amount', type: 'number', nullable: true }] },
    { key: 'orders', deps: ['raw_orders'] },
  ];

  beforeAll(async () => {
    tenant = await createTenant(stack, 'deployments');
    await tenant.api.post('/environments', { name: env, storage_prefix: 's3://lake/prod', executor: 'local' });
    await tenant.api.put(`/environments/${env}/bindings/warehouse`, { config: { host: 'db' } });
    const bundle = await makeBundle({ 'assets/raw_orders.js': 'export default async () => {}', 'assets/orders.js': 'export default async () => {}' });
    bundleRef = (await tenant.api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref;
  });

  it('ingests a valid manifest: 201, ready, active, git defaults to local, manifest omitted', async () => {
    const response = await tenant.api.post(`/environments/${env}/deployments`, { manifest: manifestOf(assets), bundle_ref: bundleRef, sdk_version: '1.2.3', created_by: 'envctl' });
    expect(response.status, response.text).toBe(201);
    const row = dataEnvelope(Deployment).parse(response.body).data;
    expect(row).toMatchObject({
      status: 'ready',
      active: true,
      git: { branch: 'local', sha: 'local' },
      bundle_ref: bundleRef,
      sdk_version: '1.2.3',
      created_by: 'envctl',
      allow_contract_changes: [],
      validation: { errors: [], warnings: [] },
      recheck: { checked: 0, quarantined: [] },
    });
    expect(row.id).toMatch(/^dep_/);
    expect(response.text).not.toContain('"manifest"');
    const environment = (await tenant.api.get(`/environments/${env}`)).body.data;
    expect(environment.active_deployment_id).toBe(row.id);
    expect(environment.git_ref).toBe('local');
    const read = await tenant.api.get(`/deployments/${row.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ id: row.id, active: true, status: 'ready' });
    expect(read.text).not.toContain('"manifest"');
  });

  it('lists the ingest and the activations in Temporal under the environment’s search attributes', async () => {
    const environment = (await tenant.api.get(`/environments/${env}`)).body.data as { id: string; name: string };
    const response = await tenant.api.post(`/environments/${env}/deployments`, { manifest: manifestOf(assets), bundle_ref: bundleRef });
    expect(response.status, response.text).toBe(201);
    // No created_by sent: the row names the token that made it.
    expect(response.body.data.created_by).toBe(tenant.tokenId);
    const id = response.body.data.id as string;
    const query = `EnvengineTenantId = '${tenant.tenantId}' AND EnvengineEnvironment = '${environment.name}' AND EnvengineEnvironmentId = '${environment.id}'`;
    const listed = await until(
      () => workflowsOf(stack.temporalAddress, query),
      (ids) => ids.includes(`ingest-${id}`) && ids.includes(`activations-${environment.id}`),
      10_000,
    );
    expect(listed).toEqual(expect.arrayContaining([`ingest-${id}`, `activations-${environment.id}`]));
    expect(await workflowsOf(stack.temporalAddress, `EnvengineDeploymentId = '${id}'`)).toEqual([`ingest-${id}`]);
    // Its outcome too: the workflow completes whether the manifest was valid or not.
    const ready = await until(() => workflowsOf(stack.temporalAddress, `EnvengineDeploymentId = '${id}' AND EnvengineIngestOutcome = 'ready'`), (ids) => ids.length > 0, 10_000);
    expect(ready).toEqual([`ingest-${id}`]);
  });

  it('fails a bad manifest: 422 with the failed row, pointer unmoved', async () => {
    const before = (await tenant.api.get(`/environments/${env}`)).body.data.active_deployment_id;
    const manifest = manifestOf([{ key: 'a', deps: ['missing'] }]);
    const response = await tenant.api.post(`/environments/${env}/deployments`, { manifest, bundle_ref: bundleRef, git: { branch: 'main', sha: 'abc123' } });
    expect(response.status, response.text).toBe(422);
    const row = dataEnvelope(Deployment).parse(response.body).data;
    expect(row.status).toBe('failed');
    expect(row.active).toBe(false);
    expect(row.git).toEqual({ branch: 'main', sha: 'abc123' });
    const codes = row.validation.errors.map((error) => error.code);
    expect(codes).toContain('unknown_dependency');
    expect(codes).toContain('entry_not_in_bundle');
    expect((await tenant.api.get(`/environments/${env}`)).body.data.active_deployment_id).toBe(before);
    // The Temporal UI filters it: its ingest completed, with the outcome `failed`.
    const failed = await until(() => workflowsOf(stack.temporalAddress, `EnvengineIngestOutcome = 'failed' AND EnvengineDeploymentId = '${row.id}'`), (ids) => ids.length > 0, 10_000);
    expect(failed).toEqual([`ingest-${row.id}`]);
    expect(await workflowsOf(stack.temporalAddress, `EnvengineIngestOutcome = 'ready' AND EnvengineDeploymentId = '${row.id}'`)).toEqual([]);
  });

  it('refuses a body without a manifest object or a bundle_ref string: 422 invalid_request, no row', async () => {
    const before = DeploymentList.parse((await tenant.api.get(`/environments/${env}/deployments`)).body).data.length;
    for (const body of [{ bundle_ref: bundleRef }, { manifest: manifestOf(assets) }, { manifest: [], bundle_ref: bundleRef }, { manifest: manifestOf(assets), bundle_ref: 5 }]) {
      const response = await tenant.api.post(`/environments/${env}/deployments`, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(ErrorBody.parse(response.body).error.code).toBe('invalid_request');
    }
    expect(DeploymentList.parse((await tenant.api.get(`/environments/${env}/deployments`)).body).data.length).toBe(before);
  });

  it('lists newest first; ?active=true gives the active one', async () => {
    const list = DeploymentList.parse((await tenant.api.get(`/environments/${env}/deployments`)).body).data;
    expect(list.length).toBeGreaterThanOrEqual(2);
    expect([...list].map((row) => row.id)).toEqual([...list].map((row) => row.id).sort().reverse());
    const active = DeploymentList.parse((await tenant.api.get(`/environments/${env}/deployments?active=true`)).body).data;
    expect(active).toHaveLength(1);
    expect(active[0]!.active).toBe(true);
    expect(list.filter((row) => row.active)).toHaveLength(1);
  });

  it('activates an older deployment (rollback) and 409s a failed one; unknown id is 404', async () => {
    const first = await tenant.api.post(`/environments/${env}/deployments`, { manifest: manifestOf(assets), bundle_ref: bundleRef, git: { branch: 'main', sha: 'one' } });
    const second = await tenant.api.post(`/environments/${env}/deployments`, { manifest: manifestOf(assets), bundle_ref: bundleRef, git: { branch: 'main', sha: 'two' } });
    expect(second.body.data.active).toBe(true);
    const rolledBack = await tenant.api.post(`/deployments/${first.body.data.id}/activate`, {});
    expect(rolledBack.status, rolledBack.text).toBe(200);
    expect(rolledBack.body.data).toMatchObject({ id: first.body.data.id, active: true, recheck: { checked: 0, quarantined: [] } });
    expect((await tenant.api.get(`/environments/${env}`)).body.data).toMatchObject({ active_deployment_id: first.body.data.id, git_ref: 'one' });
    expect((await tenant.api.get(`/deployments/${second.body.data.id}`)).body.data.active).toBe(false);

    const failed = await tenant.api.post(`/environments/${env}/deployments`, { manifest: { version: 2 }, bundle_ref: bundleRef });
    expect(failed.status).toBe(422);
    const notReady = await tenant.api.post(`/deployments/${failed.body.data.id}/activate`, {});
    expect(notReady.status).toBe(409);
    expect(notReady.body.error.code).toBe('deployment_not_ready');
    expect((await tenant.api.post(`/deployments/dep_${'0'.repeat(26)}/activate`, {})).status).toBe(404);
    expect((await tenant.api.get(`/deployments/${uniqueName('dep')}`)).status).toBe(404);
  });

  it('pages with limit and cursor, newest first', async () => {
    const all = DeploymentList.parse((await tenant.api.get(`/environments/${env}/deployments`)).body).data;
    const first = DeploymentList.parse((await tenant.api.get(`/environments/${env}/deployments?limit=2`)).body).data;
    expect(first).toEqual(all.slice(0, 2));
    const next = DeploymentList.parse((await tenant.api.get(`/environments/${env}/deployments?limit=2&cursor=${first[1]!.id}`)).body).data;
    expect(next).toEqual(all.slice(2, 4));
  });

  it('refuses bad query parameters and an unknown environment', async () => {
    for (const query of ['active=maybe', 'limit=0', 'limit=x', 'cursor=nope', 'colour=red']) {
      const response = await tenant.api.get(`/environments/${env}/deployments?${query}`);
      expect(response.status, query).toBe(422);
      expect(response.body.error.code).toBe('invalid_request');
    }
    expect((await tenant.api.get('/environments/nowhere/deployments')).status).toBe(404);
    expect((await tenant.api.post('/environments/nowhere/deployments', { manifest: {}, bundle_ref: bundleRef })).status).toBe(404);
    expect((await tenant.api.post('/environments/-bad-name/deployments', { manifest: {}, bundle_ref: bundleRef })).status).toBe(422);
    const notJson = await tenant.api.request('POST', `/environments/${env}/deployments`, { raw: '{"manifest":', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
  });

  it('activation takes {} only', async () => {
    const active = DeploymentList.parse((await tenant.api.get(`/environments/${env}/deployments?active=true`)).body).data[0]!;
    const response = await tenant.api.post(`/deployments/${active.id}/activate`, { force: true });
    expect(response.status).toBe(422);
    expect(response.body.error.code).toBe('invalid_request');
  });
});
