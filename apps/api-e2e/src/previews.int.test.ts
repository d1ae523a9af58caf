import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Binding, Environment, ErrorBody, MaterializationPreview, SecretRow, dataEnvelope } from '@envengine/contracts';
import { createTenant, makeBundle, until, type TestTenant } from '@envengine/test-harness';
import { z } from 'zod';
import { waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');
const EnvironmentRow = dataEnvelope(Environment);
const Bindings = dataEnvelope(z.array(Binding));
const Secrets = dataEnvelope(z.array(SecretRow));

/** Reports which binding settings and which secret value the run was given (a digest: never the value itself). */
const PROBE = `export default async (ctx) => {
  const { region, api_key } = await ctx.connection('warehouse');
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(api_key));
  const key_sha = [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
  await ctx.emit([{ region, key_sha }]);
};`;
const MANIFEST = {
  version: 1,
  assets: [{ key: 'probe', binding: 'warehouse', entry: 'assets/probe.js', deps: [], schema: { columns: [{ name: 'region', type: 'string' }, { name: 'key_sha', type: 'string' }] } }],
  jobs: [{ name: 'all', assets: ['probe'] }],
};
const sha = (value: string) => createHash('sha256').update(value).digest('hex');

describe('previews with a parent: inherited bindings and secrets, a guarded parent, access that follows it (docs/design.md#previews-promotion-and-diffs)', () => {
  let tenant: TestTenant;
  let other: TestTenant;
  let lake: string;
  let bundleRef: string;

  /** Runs the probe in `environment` and answers what it was given. */
  async function probe(environment: string): Promise<{ region: string; key_sha: string }> {
    const started = await tenant.api.post(`/environments/${environment}/runs`, { job: 'all' });
    expect(started.status, started.text).toBe(201);
    const run = await waitForRun(tenant, started.body.data.id as string);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    const [latest] = (await tenant.api.get(`/environments/${environment}/assets/probe/materializations?limit=1`)).body.data as Array<{ id: string; run_id: string }>;
    expect(latest!.run_id).toBe(run.id);
    const preview = dataEnvelope(MaterializationPreview).parse((await tenant.api.get(`/environments/${environment}/assets/probe/materializations/${latest!.id}/preview`)).body).data;
    return preview.rows[0] as { region: string; key_sha: string };
  }

  beforeAll(async () => {
    [tenant, other] = await Promise.all([createTenant(stack, 'previews'), createTenant(stack, 'previews-other')]);
    lake = join(stack.dataDir, 'lake', tenant.tenantId);
    expect((await tenant.api.post('/environments', { name: 'staging', storage_prefix: `file://${lake}/staging`, executor: 'local' })).status).toBe(201);
    expect((await tenant.api.put('/environments/staging/secrets/api_key', { value: 'parent-secret-one' })).status).toBe(201);
    expect((await tenant.api.put('/environments/staging/bindings/warehouse', { config: { region: 'parent' }, secret_refs: { api_key: 'api_key' } })).status).toBe(201);
    bundleRef = (await tenant.api.request('POST', '/bundles', { raw: await makeBundle({ 'assets/probe.js': PROBE }), headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref as string;
  });

  it("makes a preview under its parent's prefix, listing the parent's bindings and secrets as inherited", async () => {
    const created = await tenant.api.post('/environments', { name: 'pr-1', kind: 'preview', parent: 'staging', executor: 'local' });
    expect(created.status, created.text).toBe(201);
    expect(EnvironmentRow.parse(created.body).data).toMatchObject({ name: 'pr-1', kind: 'preview', parent: 'staging', storage_prefix: `file://${lake}/staging/previews/pr-1` });
    expect((await tenant.api.get('/environments/staging')).body.data.parent).toBeNull();

    const bindings = Bindings.parse((await tenant.api.get('/environments/pr-1/bindings')).body).data;
    expect(bindings).toEqual([expect.objectContaining({ name: 'warehouse', inherited_from: 'staging', config: { region: 'parent' }, dangling_secret_refs: [] })]);
    const secrets = Secrets.parse((await tenant.api.get('/environments/pr-1/secrets')).body).data;
    expect(secrets).toEqual([expect.objectContaining({ name: 'api_key', inherited_from: 'staging', version: 1 })]);
    expect(Secrets.parse((await tenant.api.get('/environments/staging/secrets')).body).data).toEqual([expect.objectContaining({ name: 'api_key', inherited_from: null })]);
  });

  it("runs with the parent's binding and secret; an override wins, and its delete falls back; a rotation on the parent is seen", async () => {
    // The ingest checks bindings as the preview sees them: the parent's warehouse counts.
    const deployed = await tenant.api.post('/environments/pr-1/deployments', { manifest: MANIFEST, bundle_ref: bundleRef });
    expect(deployed.status, deployed.text).toBe(201);
    expect(await probe('pr-1')).toEqual({ region: 'parent', key_sha: sha('parent-secret-one') });

    // The preview's own secret of that name is used by the inherited binding.
    expect((await tenant.api.put('/environments/pr-1/secrets/api_key', { value: 'preview-secret' })).status).toBe(201);
    expect(await probe('pr-1')).toEqual({ region: 'parent', key_sha: sha('preview-secret') });
    // And its own binding over the parent's.
    expect((await tenant.api.put('/environments/pr-1/bindings/warehouse', { config: { region: 'preview' }, secret_refs: { api_key: 'api_key' } })).status).toBe(201);
    expect(Bindings.parse((await tenant.api.get('/environments/pr-1/bindings')).body).data).toEqual([expect.objectContaining({ name: 'warehouse', inherited_from: null, config: { region: 'preview' } })]);
    expect(await probe('pr-1')).toEqual({ region: 'preview', key_sha: sha('preview-secret') });

    // The parent's own are untouched by the preview's writes.
    expect(Bindings.parse((await tenant.api.get('/environments/staging/bindings')).body).data).toEqual([expect.objectContaining({ name: 'warehouse', config: { region: 'parent' } })]);
    expect(Secrets.parse((await tenant.api.get('/environments/staging/secrets')).body).data).toEqual([expect.objectContaining({ name: 'api_key', version: 1 })]);

    // Deleting the overrides falls back to the parent's; a rotation there is the next run's.
    expect((await tenant.api.delete('/environments/pr-1/bindings/warehouse')).status).toBe(200);
    expect((await tenant.api.delete('/environments/pr-1/secrets/api_key')).status).toBe(200);
    expect((await tenant.api.put('/environments/staging/secrets/api_key', { value: 'parent-secret-two' })).status).toBe(200);
    expect(await probe('pr-1')).toEqual({ region: 'parent', key_sha: sha('parent-secret-two') });
    expect(Secrets.parse((await tenant.api.get('/environments/pr-1/secrets')).body).data).toEqual([expect.objectContaining({ name: 'api_key', inherited_from: 'staging', version: 2 })]);
  });

  it('refuses a parent that is not one: another tenant\'s, a preview, one the token cannot see, or on a persistent environment; nothing is made', async () => {
    await other.api.post('/environments', { name: 'theirs', storage_prefix: 's3://lake/theirs', executor: 'local' });
    const before = (await tenant.api.get('/environments')).body.data.length as number;
    const foreign = await tenant.api.post('/environments', { name: 'pr-x', kind: 'preview', parent: 'theirs', executor: 'local' });
    expect(foreign.status, foreign.text).toBe(404);
    expect(ErrorBody.parse(foreign.body).error.code).toBe('not_found');

    const ofPreview = await tenant.api.post('/environments', { name: 'pr-y', kind: 'preview', parent: 'pr-1', executor: 'local' });
    expect(ofPreview.status).toBe(422);
    expect(ErrorBody.parse(ofPreview.body).error.details).toEqual([expect.objectContaining({ path: 'parent' })]);
    for (const body of [
      { name: 'pr-z', kind: 'persistent', parent: 'staging', executor: 'local', storage_prefix: 's3://lake/pr-z' },
      { name: 'pr-z', parent: 'staging', executor: 'local' },
      { name: 'pr-z', kind: 'preview', executor: 'local' },
      { name: 'pr-z', kind: 'preview', parent: '-bad', executor: 'local' },
    ]) {
      const response = await tenant.api.post('/environments', body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(ErrorBody.parse(response.body).error.code).toBe('invalid_request');
    }

    // A token limited to pr-* cannot branch from staging's secrets.
    const minted = await tenant.api.post('/tokens', { name: 'previews only', scopes: ['environments:read', 'environments:write', 'bindings:write'], environments: ['pr-*'] });
    expect(minted.status, minted.text).toBe(201);
    const limited = tenant.api.withToken(minted.body.data.token as string);
    const outside = await limited.post('/environments', { name: 'pr-2', kind: 'preview', parent: 'staging', executor: 'local' });
    expect(outside.status, outside.text).toBe(404);
    expect(outside.text).not.toContain('staging/previews');
    expect((await tenant.api.get('/environments')).body.data.length).toBe(before);
  });

  it('guards a parent with live previews: 409 environment_has_previews, then ?force=true tears the previews down first', async () => {
    const refused = await tenant.api.delete('/environments/staging');
    expect(refused.status, refused.text).toBe(409);
    expect(ErrorBody.parse(refused.body).error.code).toBe('environment_has_previews');
    expect(refused.body.error.message).toContain('"pr-1"');
    // Nothing was changed by the refusal.
    expect(EnvironmentRow.parse((await tenant.api.get('/environments/staging')).body).data.status).toBe('active');
    expect((await tenant.api.get('/environments/pr-1')).status).toBe(200);
    expect(await probe('pr-1')).toEqual({ region: 'parent', key_sha: sha('parent-secret-two') });

    const forced = await tenant.api.delete('/environments/staging?force=true');
    expect(forced.status, forced.text).toBe(200);
    expect((await tenant.api.get('/environments/pr-1')).status).toBe(404);
    expect((await tenant.api.get('/environments/staging')).status).toBe(404);
  });
});

describe("a preview's data branched from its parent: ctx.read of the parent's latest until the preview has its own", () => {
  let tenant: TestTenant;
  let lake: string;
  const ORDERS = `export default async (ctx) => { await ctx.emit([{ id: 1, amount: 10 }, { id: 2, amount: 20 }]); };`;
  const PREVIEW_ORDERS = `export default async (ctx) => { await ctx.emit([{ id: 7, amount: 1 }]); };`;
  const TOTALS = `export default async (ctx) => {
    const rows = await ctx.read('orders');
    await ctx.emit([{ orders: rows.length, total: rows.reduce((sum, row) => sum + row.amount, 0) }]);
  };`;
  const manifest = (ordersColumns: Array<{ name: string; type: string }>) => ({
    version: 1,
    assets: [
      { key: 'orders', binding: 'warehouse', entry: 'assets/orders.js', deps: [], schema: { columns: ordersColumns } },
      { key: 'totals', binding: 'warehouse', entry: 'assets/totals.js', deps: ['orders'], schema: { columns: [{ name: 'orders', type: 'integer' }, { name: 'total', type: 'integer' }] } },
    ],
  });
  const ORDER_COLUMNS = [{ name: 'id', type: 'integer' }, { name: 'amount', type: 'integer' }];
  const deploy = async (environment: string, files: Record<string, string>, columns = ORDER_COLUMNS) => {
    const bundle = (await tenant.api.request('POST', '/bundles', { raw: await makeBundle(files), headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref as string;
    const response = await tenant.api.post(`/environments/${environment}/deployments`, { manifest: manifest(columns), bundle_ref: bundle });
    expect(response.status, response.text).toBe(201);
    return response.body.data as { recheck: { quarantined: string[] } };
  };
  const run = async (environment: string, assets: string[]) => {
    const started = await tenant.api.post(`/environments/${environment}/runs`, { assets });
    expect(started.status, started.text).toBe(201);
    return waitForRun(tenant, started.body.data.id as string);
  };
  const materializationsOf = async (environment: string, key: string) =>
    (await tenant.api.get(`/environments/${environment}/assets/${key}/materializations`)).body.data as Array<{ id: string; location: string }>;
  const rowsOf = async (environment: string, key: string, id: string) =>
    dataEnvelope(MaterializationPreview).parse((await tenant.api.get(`/environments/${environment}/assets/${key}/materializations/${id}/preview`)).body).data.rows;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'preview-data');
    lake = join(stack.dataDir, 'lake', tenant.tenantId);
    expect((await tenant.api.post('/environments', { name: 'main', storage_prefix: `file://${lake}/main`, executor: 'local' })).status).toBe(201);
    expect((await tenant.api.put('/environments/main/bindings/warehouse', { config: {} })).status).toBe(201);
    await deploy('main', { 'assets/orders.js': ORDERS, 'assets/totals.js': TOTALS });
    expect((await run('main', ['orders'])).status).toBe('succeeded');
    expect((await tenant.api.post('/environments', { name: 'pr-9', kind: 'preview', parent: 'main', executor: 'local' })).status).toBe(201);
    await deploy('pr-9', { 'assets/orders.js': PREVIEW_ORDERS, 'assets/totals.js': TOTALS });
  });

  it("reads the parent's upstream while the preview has none, writes only under its own prefix, and records where it read from", async () => {
    const [parentOrders] = await materializationsOf('main', 'orders');
    const totals = await run('pr-9', ['totals']);
    expect(totals.status, JSON.stringify(totals)).toBe('succeeded');
    expect(totals.attempts[0]!.reads).toEqual([{ asset: 'totals', upstream: 'orders', materialization_id: parentOrders!.id, environment: 'main' }]);
    const [own] = await materializationsOf('pr-9', 'totals');
    expect(own!.location.startsWith(`file://${lake}/main/previews/pr-9/totals/`)).toBe(true);
    expect(await rowsOf('pr-9', 'totals', own!.id)).toEqual([{ orders: 2, total: 30 }]);
    // The parent's files and rows are as they were.
    expect(await materializationsOf('main', 'totals')).toEqual([]);
    expect((await materializationsOf('main', 'orders')).map((row) => row.id)).toEqual([parentOrders!.id]);
  });

  it('reads its own once it has one', async () => {
    expect((await run('pr-9', ['orders'])).status).toBe('succeeded');
    const [ownOrders] = await materializationsOf('pr-9', 'orders');
    const totals = await run('pr-9', ['totals']);
    expect(totals.status).toBe('succeeded');
    expect(totals.attempts[0]!.reads).toEqual([{ asset: 'totals', upstream: 'orders', materialization_id: ownOrders!.id, environment: 'pr-9' }]);
    const [latest] = await materializationsOf('pr-9', 'totals');
    expect(await rowsOf('pr-9', 'totals', latest!.id)).toEqual([{ orders: 1, total: 1 }]);
  });

  it("never reads a quarantined materialization of the parent", async () => {
    expect((await tenant.api.post('/environments', { name: 'pr-10', kind: 'preview', parent: 'main', executor: 'local' })).status).toBe(201);
    await deploy('pr-10', { 'assets/orders.js': PREVIEW_ORDERS, 'assets/totals.js': TOTALS });
    // The parent's new schema for orders quarantines its stored orders.
    const changed = await deploy('main', { 'assets/orders.js': ORDERS, 'assets/totals.js': TOTALS }, [{ name: 'id', type: 'integer' }, { name: 'amount', type: 'number' }]);
    expect(changed.recheck.quarantined).toEqual(['orders']);
    const totals = await run('pr-10', ['totals']);
    expect(totals.status).toBe('failed');
    expect(totals.attempts[0]!.reads).toEqual([]);
    expect(totals.error).toContain('ctx.read("orders")');
  });
});

describe('idle previews (idle_ttl_hours)', () => {
  let tenant: TestTenant;
  const HOUR_MS = 3_600_000;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'preview-idle');
  });

  it('expires a preview with no deploy and no run for its idle lifetime', async () => {
    const created = await tenant.api.post('/environments', { name: 'pr-idle', kind: 'preview', storage_prefix: 's3://lake/idle/pr-idle', executor: 'local', idle_ttl_hours: 0.0005 });
    expect(created.status, created.text).toBe(201);
    const environment = EnvironmentRow.parse(created.body).data;
    expect(environment).toMatchObject({ idle_ttl_hours: 0.0005, ttl_hours: null });
    expect(Date.parse(environment.expires_at!) - Date.parse(environment.inserted_at)).toBe(1800);
    // Torn down by its expiry timer: the name then answers environment_expired.
    const gone = await until(() => tenant.api.get('/environments/pr-idle'), (response) => response.status === 404, 60_000, 200);
    expect(ErrorBody.parse(gone.body).error.code).toBe('environment_expired');
  });

  it('moves the idle lapse with each deploy and run, never past the TTL', async () => {
    const created = await tenant.api.post('/environments', { name: 'pr-busy', kind: 'preview', storage_prefix: 's3://lake/idle/pr-busy', executor: 'local', idle_ttl_hours: 1 });
    expect(created.status, created.text).toBe(201);
    await tenant.api.put('/environments/pr-busy/bindings/warehouse', { config: {} });
    const files = { 'assets/noop.js': 'export default async (ctx) => { await ctx.emit([{ n: 1 }]); };' };
    const bundleRef = (await tenant.api.request('POST', '/bundles', { raw: await makeBundle(files), headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref as string;
    const manifest = { version: 1, assets: [{ key: 'noop', binding: 'warehouse', entry: 'assets/noop.js', deps: [] }] };
    expect((await tenant.api.post('/environments/pr-busy/deployments', { manifest, bundle_ref: bundleRef })).status).toBe(201);
    const afterDeploy = EnvironmentRow.parse((await tenant.api.get('/environments/pr-busy')).body).data;
    expect(Date.parse(afterDeploy.expires_at!)).toBeGreaterThanOrEqual(Date.parse(created.body.data.expires_at as string));

    const started = await tenant.api.post('/environments/pr-busy/runs', { assets: ['noop'] });
    expect(started.status, started.text).toBe(201);
    const afterRun = EnvironmentRow.parse((await tenant.api.get('/environments/pr-busy')).body).data;
    // The run is activity: the lapse is an hour after it.
    expect(Date.parse(afterRun.expires_at!)).toBeGreaterThanOrEqual(Date.parse(started.body.data.inserted_at as string) + HOUR_MS);
    expect(Date.parse(afterRun.expires_at!)).toBeGreaterThan(Date.parse(afterDeploy.expires_at!));
    expect((await waitForRun(tenant, started.body.data.id as string)).status).toBe('succeeded');

    // A TTL shorter than the idle lifetime bounds it: a run moves nothing past it.
    const patched = EnvironmentRow.parse((await tenant.api.patch('/environments/pr-busy', { ttl_hours: 0.5 })).body).data;
    const ttlLapse = Date.parse(patched.expires_at!);
    expect(ttlLapse - Date.now()).toBeLessThanOrEqual(0.5 * HOUR_MS);
    expect((await tenant.api.post('/environments/pr-busy/runs', { assets: ['noop'] })).status).toBe(201);
    expect(Date.parse(EnvironmentRow.parse((await tenant.api.get('/environments/pr-busy')).body).data.expires_at!)).toBe(ttlLapse);

    // On a persistent environment it is refused, and nothing changes.
    await tenant.api.post('/environments', { name: 'kept', storage_prefix: 's3://lake/idle/kept', executor: 'local' });
    const refused = await tenant.api.patch('/environments/kept', { idle_ttl_hours: 1 });
    expect(refused.status).toBe(422);
    expect(ErrorBody.parse(refused.body).error.details).toEqual([expect.objectContaining({ path: 'idle_ttl_hours' })]);
    expect((await tenant.api.post('/environments', { name: 'kept-2', storage_prefix: 's3://lake/idle/kept-2', executor: 'local', idle_ttl_hours: 1 })).status).toBe(422);
  });
});
