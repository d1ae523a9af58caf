import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { dataEnvelope, Materialization, MaterializationPreview, PARQUET_MEDIA_TYPE, Run } from '@envengine/contracts';
import { decodeParquet } from '@envengine/materialization-storage';
import { newId } from '@envengine/resource-ids';
import { createTenant, recordMaterialization, type TestTenant } from '@envengine/test-harness';
import { deployOnS3, deployRunsProject, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');
const MaterializationPage = dataEnvelope(z.array(Materialization));
const Preview = dataEnvelope(MaterializationPreview);

const store = stack.objectStore!;
const admin = new S3Client({
  endpoint: store.url,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: store,
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
});

afterAll(() => admin.destroy());

async function runOrdersAndTotals(tenant: TestTenant): Promise<Run> {
  const created = await tenant.api.post('/environments/prod/runs', { assets: ['orders', 'totals'] });
  expect(created.status, created.text).toBe(201);
  const run = await waitForRun(tenant, Run.parse(created.body.data).id);
  expect(run.status).toBe('succeeded');
  return run;
}

async function listOf(tenant: TestTenant, key: string, query = ''): Promise<Materialization[]> {
  const response = await tenant.api.get(`/environments/prod/assets/${key}/materializations${query}`);
  expect(response.status, response.text).toBe(200);
  return MaterializationPage.parse(response.body).data;
}

interface Driver {
  name: string;
  deploy(tenant: TestTenant): Promise<void>;
  /** The stored file's bytes, read as the store's owner would, not through the engine. */
  storedBytes(tenant: TestTenant, location: string): Promise<Uint8Array>;
}

const DRIVERS: Driver[] = [
  {
    name: 'file://',
    deploy: async (tenant) => void (await deployRunsProject(tenant, join(stack.dataDir, 'lake', tenant.tenantId), 'local')),
    storedBytes: async (_tenant, location) => new Uint8Array(await readFile(fileURLToPath(location))),
  },
  {
    name: "s3:// (the engine's store)",
    deploy: (tenant) => deployOnS3(tenant, 'prod', 's3://lake/outputs', 'local'),
    storedBytes: async (tenant, location) => {
      const key = location.replace(/^s3:\/\/lake\//, `${tenant.tenantId}/`);
      return (await admin.send(new GetObjectCommand({ Bucket: 'lake', Key: key }))).Body!.transformToByteArray();
    },
  },
];

for (const driver of DRIVERS) {
  describe(`reading outputs through the API, ${driver.name}`, () => {
    let tenant: TestTenant;
    let runs: Run[];

    beforeAll(async () => {
      tenant = await createTenant(stack, 'outputs');
      await driver.deploy(tenant);
      runs = [await runOrdersAndTotals(tenant), await runOrdersAndTotals(tenant)];
    }, 120_000);

    it("lists an asset's materializations newest first, a page at a time", async () => {
      const all = await listOf(tenant, 'orders');
      expect(all.map((m) => m.run_id)).toEqual([runs[1]!.id, runs[0]!.id]);
      for (const materialization of all) {
        expect(materialization).toMatchObject({ asset_key: 'orders', row_count: 3, status: 'latest' });
        expect(materialization.attempt_id).toMatch(/^att_/);
        expect(materialization.bytes).toBeGreaterThan(0);
        expect(materialization.location).toMatch(new RegExp(`/orders/${materialization.id}\\.parquet$`));
        expect(materialization.columns.map((column) => column.name)).toEqual(['id', 'amount']);
      }
      const first = await listOf(tenant, 'orders', '?limit=1');
      expect(first.map((m) => m.id)).toEqual([all[0]!.id]);
      const next = await listOf(tenant, 'orders', `?limit=1&before=${first[0]!.id}`);
      expect(next.map((m) => m.id)).toEqual([all[1]!.id]);
      expect(await listOf(tenant, 'orders', `?before=${all[1]!.id}`)).toEqual([]);
      // Declared but never run: an empty list, not a 404.
      expect(await listOf(tenant, 'thrower')).toEqual([]);
    });

    it('downloads the stored bytes whole and by byte range', async () => {
      const [newest] = await listOf(tenant, 'orders');
      const path = `/environments/prod/assets/orders/materializations/${newest!.id}/data`;
      const stored = await driver.storedBytes(tenant, newest!.location!);
      expect(stored.byteLength).toBe(newest!.bytes);

      const whole = await tenant.api.get(path);
      expect(whole.status).toBe(200);
      expect(whole.headers.get('content-type')).toBe(PARQUET_MEDIA_TYPE);
      expect(whole.headers.get('accept-ranges')).toBe('bytes');
      expect(whole.headers.get('content-disposition')).toContain(`orders-${newest!.id}.parquet`);
      expect(Buffer.from(whole.bytes).equals(Buffer.from(stored))).toBe(true);

      const head = await tenant.api.get(path, { headers: { range: 'bytes=0-3' } });
      expect(head.status).toBe(206);
      expect(head.headers.get('content-range')).toBe(`bytes 0-3/${stored.byteLength}`);
      expect(head.text).toBe('PAR1');
      const tail = await tenant.api.get(path, { headers: { range: 'bytes=-4' } });
      expect(tail.status).toBe(206);
      expect(tail.text).toBe('PAR1');
      const middle = await tenant.api.get(path, { headers: { range: 'bytes=10-' } });
      expect(Buffer.from(middle.bytes).equals(Buffer.from(stored.subarray(10)))).toBe(true);
      // A validator that no longer matches: the whole file, as HTTP says.
      const stale = await tenant.api.get(path, { headers: { range: 'bytes=0-3', 'if-range': '"mat_other"' } });
      expect(stale.status).toBe(200);
      expect(stale.bytes.byteLength).toBe(stored.byteLength);

      const past = await tenant.api.get(path, { headers: { range: `bytes=${stored.byteLength}-` } });
      expect(past.status).toBe(416);
      expect(past.body.error.code).toBe('range_not_satisfiable');
      expect(past.headers.get('content-range')).toBe(`bytes */${stored.byteLength}`);
    });

    it('previews the first rows as ctx.read gives them', async () => {
      const [newest] = await listOf(tenant, 'orders');
      const base = `/environments/prod/assets/orders/materializations/${newest!.id}/preview`;
      const stored = await decodeParquet(await driver.storedBytes(tenant, newest!.location!));

      const two = Preview.parse((await tenant.api.get(`${base}?limit=2`)).body).data;
      expect(two).toMatchObject({ materialization_id: newest!.id, row_count: 3, truncated: true });
      expect(two.rows).toEqual(stored.slice(0, 2));
      expect(two.columns).toEqual(newest!.columns);
      const every = Preview.parse((await tenant.api.get(base)).body).data;
      expect(every.truncated).toBe(false);
      expect(every.rows).toEqual(stored);
      expect(every.rows).toEqual([{ id: 1, amount: 10.5 }, { id: 2, amount: null }, { id: 3, amount: 20 }]);

      // What totals read through ctx.read in the run is what the preview shows.
      const [totals] = await listOf(tenant, 'totals');
      const totalsPreview = Preview.parse((await tenant.api.get(`/environments/prod/assets/totals/materializations/${totals!.id}/preview`)).body).data;
      expect(totalsPreview.rows).toEqual([{ orders: every.rows.length, total: 30.5 }]);
    });
  });
}

describe('reading outputs: refusals', () => {
  let owner: TestTenant;
  let other: TestTenant;
  let s3Owner: TestTenant;
  let mine: Materialization;

  beforeAll(async () => {
    [owner, other, s3Owner] = await Promise.all([createTenant(stack, 'outputs-owner'), createTenant(stack, 'outputs-other'), createTenant(stack, 'outputs-s3')]);
    await Promise.all([
      deployRunsProject(owner, join(stack.dataDir, 'lake', owner.tenantId), 'local'),
      deployRunsProject(other, join(stack.dataDir, 'lake', other.tenantId), 'local'),
      deployOnS3(s3Owner, 'prod', 's3://lake/outputs', 'local'),
    ]);
    const created = await owner.api.post('/environments/prod/runs', { assets: ['orders'] });
    expect((await waitForRun(owner, created.body.data.id)).status).toBe('succeeded');
    mine = (await listOf(owner, 'orders'))[0]!;
  }, 120_000);

  const paths = (id: string, environment = 'prod', key = 'orders') => ({
    list: `/environments/${environment}/assets/${key}/materializations`,
    data: `/environments/${environment}/assets/${key}/materializations/${id}/data`,
    preview: `/environments/${environment}/assets/${key}/materializations/${id}/preview`,
  });

  it('another tenant gets 404 for every route, even under an environment and asset of the same names', async () => {
    const { data, preview } = paths(mine.id);
    for (const path of [data, preview]) {
      const answer = await other.api.get(path);
      expect(answer.status, path).toBe(404);
      expect(answer.text).not.toContain(mine.location!);
    }
    // The other tenant's own list of "orders" does not show the owner's.
    expect((await listOf(other, 'orders')).map((m) => m.id)).not.toContain(mine.id);
    // The owner still reads it (the positive control).
    expect((await owner.api.get(data)).status).toBe(200);
  });

  it('unknown environments, assets and materializations are 404', async () => {
    const unknownId = 'mat_00000000000000000000000000';
    const missingEnvironment = paths(mine.id, 'nope');
    for (const path of Object.values(missingEnvironment)) expect((await owner.api.get(path)).status, path).toBe(404);
    const typo = await owner.api.get(paths(mine.id, 'prod', 'ordres').list);
    expect(typo.status).toBe(404);
    expect(typo.body.error.message).toContain('ordres');
    // A malformed id is as unknown as a missing one.
    for (const path of [paths(unknownId).data, paths(unknownId).preview, paths(mine.id, 'prod', 'totals').data, paths('mat_x').data, paths('MAT_01').preview]) {
      expect((await owner.api.get(path)).status, path).toBe(404);
    }
  });

  it('bad input is 422 and names the field', async () => {
    const cases: Array<[string, string]> = [
      [`${paths(mine.id).list}?limit=0`, 'query.limit'],
      [`${paths(mine.id).list}?limit=201`, 'query.limit'],
      [`${paths(mine.id).list}?before=42`, 'query.before'],
      [`${paths(mine.id).list}?colour=red`, 'query.colour'],
      [`${paths(mine.id).preview}?limit=1001`, 'query.limit'],
      [`${paths(mine.id).preview}?limit=two`, 'query.limit'],
    ];
    for (const [path, field] of cases) {
      const answer = await owner.api.get(path);
      expect(answer.status, path).toBe(422);
      expect(answer.body.error.details.map((detail: { path: string }) => detail.path), path).toContain(field);
    }
  });

  it('a recorded location outside the environment\'s prefix is never read, even one naming the tenant\'s own other file', async () => {
    // A remote worker records what it likes through the internal path a forged report would take.
    const environment = (await other.api.get('/environments/prod')).body.data as { id: string };
    const forged = await recordMaterialization(stack, other.tenantId, {
      environment_id: environment.id,
      asset_key: 'orders',
      columns: mine.columns,
      row_count: 3,
      location: mine.location,
      bytes: mine.bytes,
    });
    const { data, preview } = paths(forged.id);
    expect((await other.api.get(data)).status).toBe(404);
    expect((await other.api.get(preview)).status).toBe(404);
  });

  it('a recorded file that is not Parquet (what a hostile worker may store) is 422 to preview, not a fault, and still downloads', async () => {
    const environment = (await owner.api.get('/environments/prod')).body.data as { id: string };
    const id = newId('mat');
    const path = join(stack.dataDir, 'lake', owner.tenantId, 'orders', `${id}.parquet`);
    const junk = Buffer.concat([Buffer.from('PAR1'), Buffer.alloc(64, 7), Buffer.from([0xff, 0xff, 0xff, 0x7f]), Buffer.from('PAR1')]);
    await writeFile(path, junk);
    await recordMaterialization(stack, owner.tenantId, { id, environment_id: environment.id, asset_key: 'orders', columns: mine.columns, row_count: 3, location: pathToFileURL(path).href, bytes: junk.length });
    const preview = await owner.api.get(paths(id).preview);
    expect(preview.status).toBe(422);
    expect(preview.body.error.message).toContain('cannot be previewed');
    const data = await owner.api.get(paths(id).data);
    expect(data.status).toBe(200);
    expect(Buffer.from(data.bytes).equals(junk)).toBe(true);
    // The service is unharmed: the real one still previews.
    expect((await owner.api.get(paths(mine.id).preview)).status).toBe(200);
  });

  it("a file in a store of the tenant's own (its binding names an endpoint) is 409 materialization_unreachable", async () => {
    const created = await s3Owner.api.post('/environments/prod/runs', { assets: ['orders'] });
    expect((await waitForRun(s3Owner, created.body.data.id)).status).toBe('succeeded');
    const [written] = await listOf(s3Owner, 'orders');
    const { data, preview } = paths(written!.id);
    expect((await s3Owner.api.get(data)).status).toBe(200);
    // The binding now names a store of the tenant's own: the engine does not fetch from it.
    expect((await s3Owner.api.put('/environments/prod/bindings/warehouse', { config: { endpoint: 'http://127.0.0.1:1' } })).status).toBe(200);
    for (const path of [data, preview]) {
      const answer = await s3Owner.api.get(path);
      expect(answer.status, path).toBe(409);
      expect(answer.body.error.code).toBe('materialization_unreachable');
      expect(answer.body.error.message).toContain(written!.location!);
    }
    expect((await s3Owner.api.put('/environments/prod/bindings/warehouse', { config: {} })).status).toBe(200);
    expect((await s3Owner.api.get(data)).status).toBe(200);
  });
});
