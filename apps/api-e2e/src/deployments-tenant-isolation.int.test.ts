import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ErrorBody } from '@envengine/contracts';
import { createTenant, makeBundle, manifestOf, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

describe('a second tenant cannot see or touch the first one\'s deployments and bundles', () => {
  let owner: TestTenant;
  let intruder: TestTenant;
  let deploymentId: string;
  let bundleRef: string;

  beforeAll(async () => {
    owner = await createTenant(stack, 'owner');
    intruder = await createTenant(stack, 'intruder');
    await owner.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/o', executor: 'local' });
    await owner.api.put('/environments/prod/bindings/warehouse', {});
    const bundle = await makeBundle({ 'assets/a.js': 'x' });
    bundleRef = `sha256:${createHash('sha256').update(bundle).digest('hex')}`;
    await owner.api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } });
    deploymentId = (await owner.api.post('/environments/prod/deployments', { manifest: manifestOf([{ key: 'a' }]), bundle_ref: bundleRef })).body.data.id;
  });

  it.each([
    ['GET', '/environments/prod/deployments'],
    ['POST', '/environments/prod/deployments'],
    ['GET', '/environments/prod/assets'],
  ])('%s %s is 404', async (method, path) => {
    const response = await intruder.api.request(method, path, method === 'POST' ? { json: { manifest: manifestOf([{ key: 'a' }]), bundle_ref: bundleRef } } : {});
    expect(response.status).toBe(404);
    expect(ErrorBody.parse(response.body).error.code).toBe('not_found');
  });

  it('reading or activating the owner\'s deployment id is 404, and changes nothing', async () => {
    expect((await intruder.api.get(`/deployments/${deploymentId}`)).status).toBe(404);
    const activate = await intruder.api.post(`/deployments/${deploymentId}/activate`, {});
    expect(activate.status).toBe(404);
    expect(activate.body.error.code).toBe('not_found');
    expect((await owner.api.get('/environments/prod')).body.data.active_deployment_id).toBe(deploymentId);
  });

  it('its own environment cannot use the owner\'s bundle: bundle_not_found', async () => {
    await intruder.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/i', executor: 'local' });
    await intruder.api.put('/environments/prod/bindings/warehouse', {});
    expect((await intruder.api.request('HEAD', `/bundles/${bundleRef}`)).status).toBe(404);
    const response = await intruder.api.post('/environments/prod/deployments', { manifest: manifestOf([{ key: 'a' }]), bundle_ref: bundleRef });
    expect(response.status).toBe(422);
    expect(response.body.data.validation.errors.map((error: { code: string }) => error.code)).toContain('bundle_not_found');
    expect((await intruder.api.get('/environments/prod/deployments')).body.data).toHaveLength(1);
    expect((await owner.api.get('/environments/prod/deployments')).body.data).toHaveLength(1);
  });
});

describe('Idempotency-Key on ingest', () => {
  it('replays the first answer for the same key and body, and refuses the key with another body', async () => {
    const tenant = await createTenant(stack, 'idem-ingest');
    await tenant.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/p', executor: 'local' });
    await tenant.api.put('/environments/prod/bindings/warehouse', {});
    const bundle = await makeBundle({ 'assets/a.js': 'x' });
    const bundleRef = (await tenant.api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref;
    const body = { manifest: manifestOf([{ key: 'a' }]), bundle_ref: bundleRef };
    const headers = { 'Idempotency-Key': 'deploy-1' };
    const first = await tenant.api.post('/environments/prod/deployments', body, { headers });
    const again = await tenant.api.post('/environments/prod/deployments', body, { headers });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await tenant.api.get('/environments/prod/deployments')).body.data).toHaveLength(1);
    const other = await tenant.api.post('/environments/prod/deployments', { ...body, sdk_version: '2' }, { headers });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect((await tenant.api.get('/environments/prod/deployments')).body.data).toHaveLength(1);
  });
});
