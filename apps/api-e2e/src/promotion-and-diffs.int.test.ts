import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Deployment, DeploymentDiff, ErrorBody, dataEnvelope } from '@envengine/contracts';
import { createTenant, makeBundle, manifestOf, type TestTenant } from '@envengine/test-harness';
import { z } from 'zod';

const stack = inject('stack');
const DeploymentRow = dataEnvelope(Deployment);
const DeploymentList = dataEnvelope(z.array(Deployment));
const Diff = dataEnvelope(DeploymentDiff);

const ORDERS_V1 = [{ name: 'id', type: 'integer' }, { name: 'amount', type: 'integer' }, { name: 'note', type: 'string' }];
const ORDERS_V2 = [{ name: 'id', type: 'integer' }, { name: 'amount', type: 'number' }, { name: 'email', type: 'string' }];

describe('promotion of a deployment and the diff of two (docs/design.md#previews-promotion-and-diffs)', () => {
  let tenant: TestTenant;
  let other: TestTenant;
  let bundleV1: string;
  let bundleV2: string;
  let staged: Deployment;

  const upload = async (who: TestTenant, files: Record<string, string>) =>
    (await who.api.request('POST', '/bundles', { raw: await makeBundle(files), headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref as string;
  const deploymentsOf = async (env: string) => DeploymentList.parse((await tenant.api.get(`/environments/${env}/deployments`)).body).data;

  beforeAll(async () => {
    [tenant, other] = await Promise.all([createTenant(stack, 'promotion'), createTenant(stack, 'promotion-other')]);
    for (const [name, strict] of [['staging', false], ['prod', true], ['loose', false]] as const) {
      expect((await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/${name}`, executor: 'local', strict })).status).toBe(201);
      expect((await tenant.api.put(`/environments/${name}/bindings/warehouse`, { config: { host: 'db' } })).status).toBe(201);
    }
    bundleV1 = await upload(tenant, { 'assets/orders.js': 'export default async () => {}', 'assets/gone.js': 'export default async () => {}', 'README.md': 'one' });
    bundleV2 = await upload(tenant, { 'assets/orders.js': 'export default async (ctx) => { void ctx; }', 'assets/fresh.js': 'export default async () => {}', 'README.md': 'one' });
    const response = await tenant.api.post('/environments/staging/deployments', {
      manifest: manifestOf([{ key: 'orders', columns: ORDERS_V1 }, { key: 'gone' }]),
      bundle_ref: bundleV1,
      git: { branch: 'main', sha: 'a1b2c3' },
      sdk_version: '0.4.0',
    });
    expect(response.status, response.text).toBe(201);
    staged = DeploymentRow.parse(response.body).data;
    expect(staged.promoted_from).toBeNull();
  });

  it('promotes the exact artifact: same bundle_ref, git and sdk_version, promoted_from set, created_by the caller, active in the target', async () => {
    const response = await tenant.api.post(`/deployments/${staged.id}/promote`, { environment: 'loose' });
    expect(response.status, response.text).toBe(201);
    const promoted = DeploymentRow.parse(response.body).data;
    expect(promoted).toMatchObject({
      status: 'ready',
      active: true,
      bundle_ref: bundleV1,
      git: { branch: 'main', sha: 'a1b2c3' },
      sdk_version: '0.4.0',
      promoted_from: staged.id,
      created_by: tenant.tokenId,
      // Nothing is stored in loose yet: nothing to re-check.
      recheck: { checked: 0, quarantined: [] },
    });
    expect(promoted.id).not.toBe(staged.id);
    const loose = (await tenant.api.get('/environments/loose')).body.data;
    expect(promoted.environment_id).toBe(loose.id);
    expect(loose.active_deployment_id).toBe(promoted.id);
    // The source stays where it was, and reads of the new row name its source.
    expect((await tenant.api.get(`/deployments/${staged.id}`)).body.data).toMatchObject({ active: true, promoted_from: null });
    expect((await tenant.api.get(`/deployments/${promoted.id}`)).body.data.promoted_from).toBe(staged.id);
  });

  it('keeps the new deployment inactive with activate: false', async () => {
    const before = (await tenant.api.get('/environments/loose')).body.data.active_deployment_id;
    const response = await tenant.api.post(`/deployments/${staged.id}/promote`, { environment: 'loose', activate: false });
    expect(response.status, response.text).toBe(201);
    expect(response.body.data).toMatchObject({ status: 'ready', active: false, promoted_from: staged.id });
    expect((await tenant.api.get('/environments/loose')).body.data.active_deployment_id).toBe(before);
  });

  it("validates by the target's rules: a strict target with a changed schema is 422 contract_change_not_allowed, and 201 with the key allowed", async () => {
    // prod's active deployment declares the old columns; staging's new one changes them.
    expect((await tenant.api.post(`/deployments/${staged.id}/promote`, { environment: 'prod' })).status).toBe(201);
    const changed = await tenant.api.post('/environments/staging/deployments', { manifest: manifestOf([{ key: 'orders', columns: ORDERS_V2 }, { key: 'fresh' }]), bundle_ref: bundleV2 });
    expect(changed.status, changed.text).toBe(201);
    const prodBefore = (await tenant.api.get('/environments/prod')).body.data.active_deployment_id;

    const refused = await tenant.api.post(`/deployments/${changed.body.data.id}/promote`, { environment: 'prod' });
    expect(refused.status, refused.text).toBe(422);
    const failedRow = DeploymentRow.parse(refused.body).data;
    expect(failedRow).toMatchObject({ status: 'failed', active: false, promoted_from: changed.body.data.id });
    expect(failedRow.validation.errors.map((error) => error.code)).toContain('contract_change_not_allowed');
    expect((await tenant.api.get('/environments/prod')).body.data.active_deployment_id).toBe(prodBefore);

    const allowed = await tenant.api.post(`/deployments/${changed.body.data.id}/promote`, { environment: 'prod', allow_contract_changes: ['orders'] });
    expect(allowed.status, allowed.text).toBe(201);
    expect(allowed.body.data).toMatchObject({ status: 'ready', active: true, allow_contract_changes: ['orders'], bundle_ref: bundleV2 });

    // A promotion of a failed deployment is refused: 409, and no row is made.
    const count = (await deploymentsOf('loose')).length;
    const notReady = await tenant.api.post(`/deployments/${failedRow.id}/promote`, { environment: 'loose' });
    expect(notReady.status, notReady.text).toBe(409);
    expect(ErrorBody.parse(notReady.body).error.code).toBe('deployment_not_ready');
    expect((await deploymentsOf('loose')).length).toBe(count);
  });

  it('refuses bad input with a clear error and changes nothing', async () => {
    const count = (await deploymentsOf('loose')).length;
    for (const body of [{}, { environment: '-bad' }, { environment: 'loose', activate: 'yes' }, { environment: 'loose', allow_contract_changes: 'orders' }, { environment: 'loose', colour: 'red' }]) {
      const response = await tenant.api.post(`/deployments/${staged.id}/promote`, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(ErrorBody.parse(response.body).error.code).toBe('invalid_request');
    }
    const nowhere = await tenant.api.post(`/deployments/${staged.id}/promote`, { environment: 'nowhere' });
    expect(nowhere.status).toBe(404);
    expect((await tenant.api.post(`/deployments/dep_${'0'.repeat(26)}/promote`, { environment: 'loose' })).status).toBe(404);
    expect((await deploymentsOf('loose')).length).toBe(count);
  });

  it("refuses another tenant's deployment and environment as 404, and a token limited to environments outside them", async () => {
    await other.api.post('/environments', { name: 'loose', storage_prefix: 's3://lake/other', executor: 'local' });
    // The other tenant's own environment of the same name does not make ours theirs.
    expect((await other.api.post(`/deployments/${staged.id}/promote`, { environment: 'loose' })).status).toBe(404);
    expect((await other.api.get(`/deployments/${staged.id}/diff`)).status).toBe(404);
    expect((await other.api.get('/environments/loose/deployments')).body.data).toEqual([]);

    const minted = await tenant.api.post('/tokens', { name: 'pr-only', role: 'deployer', environments: ['pr-*'] });
    expect(minted.status, minted.text).toBe(201);
    const limited = tenant.api.withToken(minted.body.data.token as string);
    await tenant.api.post('/environments', { name: 'pr-7', storage_prefix: 's3://lake/pr-7', executor: 'local', kind: 'preview' });
    await tenant.api.put('/environments/pr-7/bindings/warehouse', { config: {} });
    // Its source is outside the token's environments: as if it did not exist.
    expect((await limited.post(`/deployments/${staged.id}/promote`, { environment: 'pr-7' })).status).toBe(404);
    expect((await limited.get(`/deployments/${staged.id}/diff`)).status).toBe(404);
    // A deployment inside them may not be promoted out of them.
    const inside = await tenant.api.post(`/deployments/${staged.id}/promote`, { environment: 'pr-7' });
    expect(inside.status, inside.text).toBe(201);
    const prodBefore = (await tenant.api.get('/environments/prod')).body.data.active_deployment_id;
    expect((await limited.post(`/deployments/${inside.body.data.id}/promote`, { environment: 'prod' })).status).toBe(404);
    expect((await tenant.api.get('/environments/prod')).body.data.active_deployment_id).toBe(prodBefore);
    expect((await limited.post(`/deployments/${inside.body.data.id}/promote`, { environment: 'pr-7' })).status).toBe(201);
  });

  it('diffs two deployments: columns added, removed and retyped, assets added and removed, a changed job and changed files', async () => {
    const base = staged;
    const head = DeploymentRow.parse(
      (
        await tenant.api.post('/environments/staging/deployments', {
          manifest: { ...manifestOf([{ key: 'orders', columns: ORDERS_V2 }, { key: 'fresh' }]), schedules: [{ name: 'nightly', job: 'all', cron: '0 3 * * *', timezone: 'UTC' }] },
          bundle_ref: bundleV2,
          activate: false,
        })
      ).body,
    ).data;
    const response = await tenant.api.get(`/deployments/${head.id}/diff?base=${base.id}`);
    expect(response.status, response.text).toBe(200);
    const diff = Diff.parse(response.body).data;
    expect(diff.base_id).toBe(base.id);
    expect(diff.head_id).toBe(head.id);
    const byKey = new Map(diff.assets.map((asset) => [asset.key, asset]));
    expect(byKey.get('fresh')?.change).toBe('added');
    expect(byKey.get('gone')?.change).toBe('removed');
    expect(byKey.get('orders')).toMatchObject({
      change: 'changed',
      columns_added: [{ name: 'email', type: 'string', nullable: false }],
      columns_removed: [{ name: 'note', type: 'string', nullable: false }],
      columns_changed: [{ name: 'amount', from: 'integer', to: 'number' }],
    });
    expect(diff.jobs).toEqual([{ name: 'all', change: 'changed', assets: { added: ['fresh'], removed: ['gone'] } }]);
    expect(diff.schedules).toEqual([{ name: 'nightly', change: 'changed', cron: { from: '0 2 * * *', to: '0 3 * * *' } }]);
    expect(diff.files).toEqual({ added: ['assets/fresh.js'], removed: ['assets/gone.js'], changed: ['assets/orders.js'] });
  });

  it("defaults the base to the deployment active before this one, else to the active one; another tenant's base is 404", async () => {
    const deploy = async (columns: typeof ORDERS_V1, activate = true) =>
      DeploymentRow.parse((await tenant.api.post('/environments/loose/deployments', { manifest: manifestOf([{ key: 'orders', columns }]), bundle_ref: bundleV1, activate })).body).data;
    const before = await deploy(ORDERS_V1);
    const activated = await deploy(ORDERS_V2);
    const afterActivation = Diff.parse((await tenant.api.get(`/deployments/${activated.id}/diff`)).body).data;
    expect(afterActivation.base_id).toBe(before.id);
    expect(afterActivation.assets.map((asset) => asset.key)).toEqual(['orders']);
    // Never activated: against the active one.
    const kept = await deploy(ORDERS_V1, false);
    expect(Diff.parse((await tenant.api.get(`/deployments/${kept.id}/diff`)).body).data.base_id).toBe(activated.id);
    // Against itself: nothing changed.
    const same = Diff.parse((await tenant.api.get(`/deployments/${kept.id}/diff?base=${kept.id}`)).body).data;
    expect(same).toMatchObject({ assets: [], jobs: [], schedules: [], files: { added: [], removed: [], changed: [] } });

    const theirs = await other.api.post('/environments/loose/deployments', { manifest: manifestOf([{ key: 'orders' }]), bundle_ref: await upload(other, { 'assets/orders.js': 'x' }) });
    expect(theirs.status, theirs.text).toBeLessThan(500);
    const foreign = await tenant.api.get(`/deployments/${kept.id}/diff?base=${theirs.body.data.id}`);
    expect(foreign.status).toBe(404);
    expect(ErrorBody.parse(foreign.body).error.code).toBe('not_found');
    expect((await tenant.api.get(`/deployments/${kept.id}/diff?colour=red`)).status).toBe(422);
  });

  it('diffs the first deployment of an environment against nothing: every asset added', async () => {
    await tenant.api.post('/environments', { name: 'first', storage_prefix: 's3://lake/first', executor: 'local' });
    await tenant.api.put('/environments/first/bindings/warehouse', { config: {} });
    const first = await tenant.api.post(`/deployments/${staged.id}/promote`, { environment: 'first' });
    expect(first.status, first.text).toBe(201);
    const diff = Diff.parse((await tenant.api.get(`/deployments/${first.body.data.id}/diff`)).body).data;
    expect(diff.base_id).toBeNull();
    expect(diff.assets.map((asset) => [asset.key, asset.change])).toEqual([['gone', 'added'], ['orders', 'added']]);
    expect(diff.files.added).toEqual(['README.md', 'assets/gone.js', 'assets/orders.js']);
  });
});
