import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { connectRedis } from '@envengine/redis-connections';
import { Binary, MongoClient } from 'mongodb';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { callResolve, createTenant, makeBundle, manifestOf, replicaLogFiles, scanDatabases, scanLogs, scanRedis, scanWorkflowHistories, type ApiResponse, type TestTenant, until } from '@envengine/test-harness';

const stack = inject('stack');

/**
 * Writes unique values as secrets, drives every secrets and bindings endpoint and error
 * path with them, then searches every response, every service log, every document of
 * every database, every Redis key and every Temporal workflow history: zero hits.
 */
describe('secret canary', () => {
  const canaries = [`canary-${randomBytes(12).toString('hex')}`, `canary-${randomBytes(12).toString('hex')}`];
  const [first, second] = canaries as [string, string];
  let owner: TestTenant;
  let intruder: TestTenant;
  const responses: Array<{ call: string; response: ApiResponse }> = [];

  const record = async (call: string, request: Promise<ApiResponse>) => {
    const response = await request;
    responses.push({ call, response });
    return response;
  };

  beforeAll(async () => {
    owner = await createTenant(stack, 'canary');
    intruder = await createTenant(stack, 'canary-intruder');
    await owner.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/c/p', executor: 'local' });
    await intruder.api.post('/environments', { name: 'mine', storage_prefix: 's3://lake/i/m', executor: 'local' });
  });

  it('drives every endpoint and error path with the canaries', async () => {
    const api = owner.api;
    const json = { 'content-type': 'application/json' };
    expect((await record('create', api.put('/environments/prod/secrets/canary', { value: first }))).status).toBe(201);
    expect((await record('rotate', api.put('/environments/prod/secrets/canary', { value: second }))).status).toBe(200);
    await record('list', api.get('/environments/prod/secrets'));
    await record('too large', api.put('/environments/prod/secrets/canary', { value: first + 'x'.repeat(64 * 1024) }));
    await record('over the body limit', api.put('/environments/prod/secrets/canary', { value: first + 'x'.repeat(1024 * 1024) }));
    await record('not JSON', api.request('PUT', '/environments/prod/secrets/canary', { raw: `{"value": "${first}"`, headers: json }));
    await record('wrong content type', api.request('PUT', '/environments/prod/secrets/canary', { raw: JSON.stringify({ value: first }), headers: { 'content-type': 'text/plain' } }));
    await record('unknown field', api.put('/environments/prod/secrets/canary', { value: first, version: 3 }));
    await record('value in an array', api.put('/environments/prod/secrets/canary', { value: [first] }));
    await record('value in an object', api.put('/environments/prod/secrets/canary', { value: { v: first } }));
    await record('bad secret name', api.put('/environments/prod/secrets/bad%20name', { value: first }));
    await record('bad environment name', api.put('/environments/-bad-env/secrets/canary', { value: first }));
    await record('unknown environment', api.put('/environments/nowhere/secrets/canary', { value: first }));
    await record('another tenant', intruder.api.put('/environments/prod/secrets/canary', { value: first }));
    await record('wrong method', api.post('/environments/prod/secrets/canary', { value: first }));
    await record('no token', api.withToken(undefined).put('/environments/prod/secrets/canary', { value: first }));
    await record('idempotent POST', api.post('/environments/prod/secrets/canary', { value: first }, { headers: { 'Idempotency-Key': 'k1' } }));

    await record('bind', api.put('/environments/prod/bindings/warehouse', { config: { host: 'db' }, secret_refs: { password: 'canary' } }));
    await record('bind unknown secret', api.put('/environments/prod/bindings/other', { secret_refs: { password: 'missing' } }));
    await record('bind bad', api.put('/environments/prod/bindings/other', { secret_refs: { password: 'canary' }, mode: first }));
    await record('list bindings', api.get('/environments/prod/bindings'));
    await record('another tenant lists', intruder.api.get('/environments/prod/bindings'));

    // An ingest whose workflow gathers this environment's bindings (names and modes only).
    const bundle = await makeBundle({ 'assets/orders.js': 'x' });
    const bundleRef = (await api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref;
    const ingest = await record('ingest', api.post('/environments/prod/deployments', { manifest: manifestOf([{ key: 'orders' }]), bundle_ref: bundleRef }));
    expect(ingest.status).toBe(201);

    const environmentId = (await api.get('/environments/prod')).body.data.id as string;
    // The one answer that carries the value: to the resolver-credential holder, and kept out of the scan.
    const resolved = await callResolve(stack, { tenantId: owner.tenantId, body: { environment_id: environmentId, binding: 'warehouse', attempt_id: 'att_canary' } });
    expect(resolved.body.data.config.password).toBe(second);
    await record('resolve by another tenant', callResolve(stack, { tenantId: intruder.tenantId, body: { environment_id: environmentId, binding: 'warehouse' } }));
    await record('resolve with the gateway credential', callResolve(stack, { tenantId: owner.tenantId, body: { environment_id: environmentId, binding: 'warehouse' }, credential: 'g'.repeat(64) }));

    expect((await record('delete', api.delete('/environments/prod/secrets/canary'))).status).toBe(200);
    await record('delete again', api.delete('/environments/prod/secrets/canary'));
    await record('dangling listing', api.get('/environments/prod/bindings'));
    await record('resolve dangling', callResolve(stack, { tenantId: owner.tenantId, body: { environment_id: environmentId, binding: 'warehouse' } }));

    // A webhook's signing secrets are canaries too: shown once at create and rotation (those
    // answers are not recorded), then never again, and stored only sealed. A delivery is tried
    // (nothing listens on the discard port) so that the sender's path runs.
    const webhook = await api.post('/webhooks', { url: 'http://127.0.0.1:9/canary', events: ['secret.*'] });
    expect(webhook.status, webhook.text).toBe(201);
    const rotated = await api.post(`/webhooks/${webhook.body.data.id}/secret/rotate`);
    expect(rotated.status).toBe(200);
    for (const secret of [webhook.body.data.secret as string, rotated.body.data.secret as string]) canaries.push(secret, secret.slice('whsec_'.length));
    await record('webhook read', api.get(`/webhooks/${webhook.body.data.id}`));
    await record('webhooks listed', api.get('/webhooks'));
    await record('webhook test', api.post(`/webhooks/${webhook.body.data.id}/test`));
    await until(async () => (await api.get(`/webhooks/${webhook.body.data.id}/deliveries`)).body.data as Array<{ attempts: unknown[] }>, (rows) => (rows[0]?.attempts.length ?? 0) > 0, 20_000, 100);
    await record('webhook deliveries', api.get(`/webhooks/${webhook.body.data.id}/deliveries`));

    // An API token that a token mints is a canary too: shown once at create (not recorded), then
    // kept only as a hash. It is used, refused a scope, listed, evented and revoked.
    const minted = await api.post('/tokens', { name: 'canary', role: 'viewer', environments: ['prod'] });
    expect(minted.status, minted.text).toBe(201);
    const mintedToken = minted.body.data.token as string;
    // The positive control: the one answer that shows it does hold it.
    expect(minted.text).toContain(mintedToken);
    canaries.push(mintedToken, mintedToken.slice('eek_'.length));
    const viewer = api.withToken(mintedToken);
    expect((await record('minted token used', viewer.get('/environments/prod'))).status).toBe(200);
    expect((await record('minted token refused a scope', viewer.put('/environments/prod/secrets/x', { value: 'v' }))).status).toBe(403);
    expect((await record('minted token outside its environments', viewer.get('/environments/other'))).status).toBe(404);
    await record('tokens listed', api.get('/tokens'));
    await record('token events', api.get('/events?type=token.*'));
    expect((await record('minted token revoked', api.delete(`/tokens/${minted.body.data.id}`))).status).toBe(200);
    expect((await record('revoked token refused', viewer.get('/environments/prod'))).status).toBe(401);
    expect(responses.length).toBeGreaterThan(25);
  });

  it('finds the canaries in no response', () => {
    const hits = responses.filter(({ response }) => canaries.some((canary) => response.text.includes(canary))).map(({ call }) => call);
    expect(hits).toEqual([]);
  });

  it('finds the canaries in no service log', async () => {
    // A marker request through each service, sent after every canary request: once its
    // line is in a log, that process has written everything before it (lines go in order).
    const marker = `marker-${randomBytes(8).toString('hex')}`;
    const services = ['gateway', 'secrets-service', 'placement-service', 'deployment-service'] as const;
    // Every replica's log: the marker is sent again through every gateway until each
    // replica of each service has logged it (callers take the replicas in turn).
    const expected = services.flatMap((service) => replicaLogFiles(stack, service).map((file) => `log ${file}`)).sort();
    const logged = await until(
      async () => {
        for (const gateway of stack.replicaUrls.gateway) {
          for (const path of ['/environments/prod/secrets', '/environments/prod/bindings', '/environments/prod', '/environments/prod/deployments']) {
            const response = await fetch(`${gateway}/api/v1${path}`, { headers: { authorization: `Bearer ${owner.token}`, 'X-Request-Id': marker } });
            await response.body?.cancel();
            expect(response.status).toBe(200);
          }
        }
        return new Set(scanLogs(stack.dataDir, [marker]).hits.map((hit) => hit.where));
      },
      (where) => expected.every((file) => where.has(file)),
      20_000,
    );
    // The scanner finds what is there: the marker, in every service the requests passed.
    expect([...logged].sort()).toEqual(expected);

    const { hits, files } = scanLogs(stack.dataDir, canaries);
    expect(files).toBeGreaterThanOrEqual(6);
    expect(hits).toEqual([]);
  });

  it('finds the canaries in no MongoDB document of any database', async () => {
    const { hits, documents, unreadable } = await scanDatabases(stack.mongoUrl, canaries);
    expect(documents).toBeGreaterThan(0);
    expect(hits).toEqual([]);
    // With authentication on, mongod's own bookkeeping (cluster-time signing keys, replication
    // markers) is closed even to the administrator; nothing of the engine's is, nor the oplog.
    expect(unreadable).toContain('admin.system.keys');
    expect(unreadable.filter((name) => !/^(admin|config|local)\.(system|replset)\./.test(name))).toEqual([]);
    // The scan itself finds what is there: a planted marker, as text and as binary.
    const marker = `marker-${randomBytes(8).toString('hex')}`;
    const probe = new MongoClient(stack.mongoUrl);
    try {
      const scratch = probe.db(`${stack.databases.gateway}_probe`).collection('probe');
      await scratch.insertOne({ text: `x${marker}x`, bytes: new Binary(Buffer.from(marker)) });
      const planted = await scanDatabases(stack.mongoUrl, [marker]);
      const where = planted.hits.map((hit) => hit.where);
      expect(where.filter((place) => place.includes('_probe.probe'))).toHaveLength(2);
      // The replica set's oplog holds every write too, and the scan reads it.
      expect(where.some((place) => place.startsWith('mongodb local.oplog.rs'))).toBe(true);
      await probe.db(`${stack.databases.gateway}_probe`).dropDatabase();
    } finally {
      await probe.close();
    }
  });

  it('finds the canaries in no Redis key', async () => {
    const { hits } = await scanRedis(stack.redisUrl, canaries);
    expect(hits).toEqual([]);
    const marker = `marker-${randomBytes(8).toString('hex')}`;
    const redis = connectRedis(stack.redisUrl);
    try {
      await redis.hset(`probe:${marker.slice(-4)}`, 'field', marker);
      expect((await scanRedis(stack.redisUrl, [marker])).hits.length).toBe(1);
      await redis.del(`probe:${marker.slice(-4)}`);
    } finally {
      redis.disconnect();
    }
  });

  it('finds the canaries in no Temporal workflow history', async () => {
    const { hits, histories } = await scanWorkflowHistories(stack.temporalAddress, canaries);
    expect(histories).toBeGreaterThan(0);
    expect(hits).toEqual([]);

    // The scanner finds what is there: a marker only in a workflow's input payload (not in
    // its id or task queue, which are plain text), on a task queue no worker polls.
    const marker = `marker-${randomBytes(8).toString('hex')}`;
    const probeId = `probe-${randomBytes(8).toString('hex')}`;
    const connection = await Connection.connect({ address: stack.temporalAddress });
    try {
      const handle = await new Client({ connection }).workflow.start('scannerProbe', {
        taskQueue: probeId,
        workflowId: probeId,
        args: [{ note: marker }],
      });
      // Listing lags a start a little: wait until the scan lists the probe.
      const planted = await until(() => scanWorkflowHistories(stack.temporalAddress, [marker]), (scan) => scan.hits.length > 0, 10_000);
      expect(planted.hits.map((hit) => hit.where)).toEqual([`temporal ${probeId}/${handle.firstExecutionRunId}`]);
      await handle.terminate('scanner probe done');
    } finally {
      await connection.close();
    }
  });
});
