import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BundleRepository, DeploymentRepository } from '@envengine/deployment-data';
import { BUNDLE_UNPACKED_DEFAULTS } from '@envengine/contracts';
import { EventOutbox } from '@envengine/event-log';
import { createTenant, deployProject, makeBundle, startTestStack, until, type TestStack, type TestTenant } from '@envengine/test-harness';

const shared = inject('stack');
const gzip = { 'content-type': 'application/gzip' };
const RETENTION_SECONDS = 2;

const project = (environment: string, lakeDir: string, marker: string) => ({
  environment,
  storagePrefix: `file://${lakeDir}/${environment}`,
  executor: 'local' as const,
  bindings: { warehouse: {} },
  files: { 'assets/orders.js': `export default async (ctx) => ctx.emit([{ id: 1, marker: '${marker}' }]);` },
  manifest: {
    version: 1,
    assets: [{ key: 'orders', binding: 'warehouse', entry: 'assets/orders.js', deps: [] }],
    jobs: [{ name: 'all', assets: ['orders'] }],
    schedules: [],
  },
});

describe(`bundles no deployment names are removed a retention after their last use (a stack of its own, BUNDLE_RETENTION_SECONDS=${RETENTION_SECONDS})`, () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let lakeDir: string;

  beforeAll(async () => {
    stack = await startTestStack({
      replicas: 1,
      mongoUrl: shared.mongoUrl,
      redisUrl: shared.redisUrl,
      temporalAddress: shared.temporalAddress,
      env: { BUNDLE_RETENTION_SECONDS: String(RETENTION_SECONDS) },
    });
    tenant = await createTenant(stack.info, 'retention');
    lakeDir = join(stack.info.dataDir, 'lake');
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const head = async (ref: string) => (await tenant.api.request('HEAD', `/bundles/${ref}`)).status;
  const storedBytes = async () => ((await tenant.api.get('/quotas')).body.data as { bundle_bytes: { used: number } }).bundle_bytes.used;

  it('keeps a deployed bundle, removes one never deployed and one whose environment was deleted, and frees their bytes', { timeout: 120_000 }, async () => {
    const kept = await deployProject(tenant.api, project('prod', lakeDir, 'kept'));
    const orphaned = await deployProject(tenant.api, project('scratch', lakeDir, 'orphaned'));
    const unusedBytes = await makeBundle({ 'assets/unused.js': 'export default async () => {};' });
    const unused = (await tenant.api.request('POST', '/bundles', { raw: unusedBytes, headers: gzip })).body.data.bundle_ref as string;
    expect([await head(kept), await head(orphaned), await head(unused)]).toEqual([200, 200, 200]);
    const before = await storedBytes();

    // The never-deployed one goes once its retention has passed (evidence: its HEAD)...
    await until(() => head(unused), (status) => status === 404, 60_000, 200);
    // ...while both deployed ones, referenced before it was uploaded, are older and stay:
    // the sweeps that looked at them found a deployment naming each.
    expect([await head(kept), await head(orphaned)]).toEqual([200, 200]);
    expect(await storedBytes()).toBe(before - unusedBytes.length);

    // Its environment deleted, the other one is named by nothing and goes too.
    expect((await tenant.api.delete('/environments/scratch')).status).toBe(200);
    await until(() => head(orphaned), (status) => status === 404, 60_000, 200);
    expect(await head(kept)).toBe(200);

    // The kept bundle still runs.
    const run = (await tenant.api.post('/environments/prod/runs', { job: 'all' })).body.data as { id: string };
    const finished = await until(() => tenant.api.get(`/runs/${run.id}`), (response) => ['succeeded', 'failed', 'canceled'].includes(response.body.data.status), 60_000, 200);
    expect(finished.body.data.status).toBe('succeeded');

    // The same bytes again are a new upload, stored anew.
    expect((await tenant.api.request('POST', '/bundles', { raw: unusedBytes, headers: gzip })).status).toBe(201);
    expect(await head(unused)).toBe(200);
  });
});

describe('the bundle sweep and a deployment naming the bundle take turns (the repositories on a database of their own)', () => {
  let connection: mongoose.Connection;
  let bundles: BundleRepository;
  let deployments: DeploymentRepository;

  beforeAll(async () => {
    connection = await mongoose.createConnection(shared.mongoUrl, { dbName: `bundle_sweep_${randomBytes(4).toString('hex')}` }).asPromise();
    bundles = new BundleRepository(connection);
    deployments = new DeploymentRepository(connection, bundles, new EventOutbox(connection));
    await Promise.all([bundles.ensureIndexes(), deployments.ensureIndexes()]);
  });

  afterAll(async () => {
    await connection?.dropDatabase();
    await connection?.close();
  });

  const limits = { bytes: 1024 * 1024, unpackedBytes: BUNDLE_UNPACKED_DEFAULTS.maxUnpackedMb * 1024 * 1024, files: BUNDLE_UNPACKED_DEFAULTS.maxFiles };
  const store = async (tenantId: string, text: string) => (await bundles.store(tenantId, Readable.from([await makeBundle({ 'assets/a.js': text })]), limits)).bundleRef;

  it('keeps a bundle whose manifest was stored after the sweep found none naming it, before the sweep removed it', async () => {
    const ref = await store('ten_turns', 'export default async () => 1;');
    let interleaved = false;
    // The sweep's transaction reads "named by nothing"; then, before its delete, a
    // deployment stores its manifest naming the bundle and commits.
    const swept = await bundles.removeUnreferenced(new Date(Date.now() + 60_000), async (tenantId, bundleRef, session) => {
      const named = await deployments.namesBundle(tenantId, bundleRef, session);
      if (!interleaved) {
        interleaved = true;
        await deployments.storeManifest(tenantId, 'dep_turns', { id: 'env_turns', name: 'turns' }, bundleRef, { version: 1 });
      }
      return named;
    });
    // The delete met the manifest's write to the bundle, the sweep ran again, and saw it.
    expect(swept).toMatchObject({ removed: 0, bytes: 0 });
    expect(await bundles.exists('ten_turns', ref)).toBe(true);
  });

  it('removes an unnamed bundle of one tenant only, with its file, and leaves another tenant’s of the same bytes', async () => {
    const text = 'export default async () => 2;';
    const ref = await store('ten_one', text);
    expect(await store('ten_two', text)).toBe(ref);
    await deployments.storeManifest('ten_two', 'dep_two', { id: 'env_two', name: 'two' }, ref, { version: 1 });
    const files = () => connection.db!.collection('bundle_files.files').countDocuments();
    const filesBefore = await files();
    const swept = await bundles.removeUnreferenced(new Date(Date.now() + 60_000), (tenantId, bundleRef, session) => deployments.namesBundle(tenantId, bundleRef, session));
    expect(swept.removed).toBe(1);
    expect(await bundles.exists('ten_one', ref)).toBe(false);
    expect(await bundles.exists('ten_two', ref)).toBe(true);
    expect(await files()).toBe(filesBefore - 1);
  });
});
