import { beforeAll, describe, expect, inject, it } from 'vitest';
import { Deployment, dataEnvelope } from '@envengine/contracts';
import { createTenant, makeBundle, manifestOf, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

/** Every validation code of docs/design.md#ingest through the gateway; strict against non-strict environments. */
describe('deployment validation codes', () => {
  let tenant: TestTenant;
  let bundleRef: string;
  const columns = [{ name: 'id', type: 'integer' }];
  const changed = [{ name: 'id', type: 'string' }];

  const ingest = async (env: string, body: Record<string, unknown>) => {
    const response = await tenant.api.post(`/environments/${env}/deployments`, { bundle_ref: bundleRef, ...body });
    return { status: response.status, row: dataEnvelope(Deployment).parse(response.body).data };
  };
  const codes = (items: Array<{ code: string }>) => items.map((item) => item.code);

  beforeAll(async () => {
    tenant = await createTenant(stack, 'validation');
    for (const [name, strict] of [['loose', false], ['strict', true]] as const) {
      await tenant.api.post('/environments', { name, storage_prefix: `s3://lake/${name}`, executor: 'local', strict });
      await tenant.api.put(`/environments/${name}/bindings/warehouse`, {});
      await tenant.api.put(`/environments/${name}/bindings/archive`, { mode: 'read_only' });
    }
    const bundle = await makeBundle(Object.fromEntries(['a', 'b', 'c'].map((key) => [`assets/${key}.js`, 'export default async () => {}'])));
    bundleRef = (await tenant.api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref;
    for (const env of ['loose', 'strict']) {
      const first = await ingest(env, { manifest: manifestOf([{ key: 'a', columns }, { key: 'b', columns }, { key: 'c' }]) });
      expect(first.status).toBe(201);
    }
  });

  const cases: Array<[string, Record<string, unknown>]> = [
    ['manifest_invalid', { manifest: { version: 2, assets: [] } }],
    ['duplicate_asset', { manifest: manifestOf([{ key: 'a' }, { key: 'a' }]) }],
    ['unknown_dependency', { manifest: manifestOf([{ key: 'a', deps: ['zz'] }]) }],
    ['dependency_cycle', { manifest: manifestOf([{ key: 'a', deps: ['b'] }, { key: 'b', deps: ['a'] }]) }],
    ['unknown_binding', { manifest: manifestOf([{ key: 'a' }], 'no-such-binding') }],
    ['bundle_not_found', { manifest: manifestOf([{ key: 'a' }]), bundle_ref: `sha256:${'1'.repeat(64)}` }],
    // Found by the OpenAPI fuzzer: an empty ref was refused by the row's store on every retry, and the ingest never ended.
    ['bundle_not_found', { manifest: manifestOf([{ key: 'a' }]), bundle_ref: '' }],
    ['entry_not_in_bundle', { manifest: manifestOf([{ key: 'zzz' }]) }],
    ['unknown_job_asset', { manifest: { ...manifestOf([{ key: 'a' }]), jobs: [{ name: 'j', assets: ['nope'] }], schedules: [] } }],
    ['unknown_schedule_job', { manifest: { ...manifestOf([{ key: 'a' }]), schedules: [{ name: 's', job: 'nope', cron: '0 * * * *' }] } }],
    ['invalid_cron', { manifest: { ...manifestOf([{ key: 'a' }]), schedules: [{ name: 's', job: 'all', cron: '61 * * * *' }] } }],
    ['allow_contract_changes_duplicate', { manifest: manifestOf([{ key: 'a', columns: changed }, { key: 'b', columns }, { key: 'c' }]), allow_contract_changes: ['a', 'a'] }],
    ['allow_contract_changes_not_changed', { manifest: manifestOf([{ key: 'a', columns }, { key: 'b', columns }, { key: 'c' }]), allow_contract_changes: ['b'] }],
    ['manifest_invalid', { manifest: manifestOf([{ key: 'a' }]), git: { branch: 'main' } }],
  ];

  it.each(cases)('%s fails the deployment with that code (422, row returned)', async (code, body) => {
    const before = (await tenant.api.get('/environments/loose')).body.data.active_deployment_id;
    const { status, row } = await ingest('loose', body);
    expect(status).toBe(422);
    expect(row.status).toBe('failed');
    expect(codes(row.validation.errors)).toContain(code);
    for (const error of row.validation.errors) expect(error).toEqual({ code: expect.any(String), path: expect.any(String), message: expect.any(String) });
    expect((await tenant.api.get('/environments/loose')).body.data.active_deployment_id).toBe(before);
  });

  it('lists every mistake of a manifest in one ingest: a column type, a deps typo, an unknown asset in a job and a bad cron', async () => {
    const manifest = {
      ...manifestOf([{ key: 'a', columns: [{ name: 'id', type: 'decimal' }] }, { key: 'b', deps: ['aa'] }, { key: 'c' }]),
      jobs: [{ name: 'j', assets: ['a', 'reports'] }],
      schedules: [{ name: 's', job: 'j', cron: '0 25 * * *' }],
    };
    const { status, row } = await ingest('loose', { manifest });
    expect(status).toBe(422);
    expect(row.validation.errors.map(({ code, path }) => ({ code, path }))).toEqual([
      { code: 'manifest_invalid', path: 'manifest.assets.0.schema.columns.0.type' },
      { code: 'unknown_dependency', path: 'manifest.assets.1.deps.0' },
      { code: 'unknown_job_asset', path: 'manifest.jobs.0.assets.1' },
      { code: 'invalid_cron', path: 'manifest.schedules.0.cron' },
    ]);
  });

  it('warns contract_changed, asset_removed and read_only_binding in a non-strict environment, and is ready', async () => {
    const manifest = manifestOf([{ key: 'a', columns: changed }, { key: 'b', columns }]);
    (manifest.assets as Array<{ binding: string }>)[1]!.binding = 'archive';
    const { status, row } = await ingest('loose', { manifest, activate: false });
    expect(status).toBe(201);
    expect(codes(row.validation.warnings).sort()).toEqual(['asset_removed', 'contract_changed', 'read_only_binding']);
    expect(row.active).toBe(false);
  });

  it('a strict environment refuses a changed schema unless allow_contract_changes lists it', async () => {
    const manifest = manifestOf([{ key: 'a', columns: changed }, { key: 'b', columns }, { key: 'c' }]);
    const refused = await ingest('strict', { manifest, activate: false });
    expect(refused.status).toBe(422);
    expect(codes(refused.row.validation.errors)).toEqual(['contract_change_not_allowed']);
    const allowed = await ingest('strict', { manifest, activate: false, allow_contract_changes: ['a'] });
    expect(allowed.status).toBe(201);
    expect(allowed.row.allow_contract_changes).toEqual(['a']);
    expect(allowed.row.validation.errors).toEqual([]);
  });

  it('accepts the manifest fields beside the ingest fields, as the command-line client sends them', async () => {
    const manifest = manifestOf([{ key: 'a', columns }, { key: 'b', columns }, { key: 'c' }]);
    const { status, row } = await ingest('loose', { ...manifest, manifest, activate: false, created_by: 'envctl/0.1' });
    expect(status).toBe(201);
    expect(row.created_by).toBe('envctl/0.1');
  });
});
