import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { SignatureV4 } from '@smithy/signature-v4';
import { AssetListing, Environment, ATTEMPT_LEASE_HEADER, AttemptStarted, dataEnvelope, Run, StorageConnection, type PoolCredentialIssued } from '@envengine/contracts';
import { decodeParquet, NodeSha256, ObjectStoreError, S3_PART_BYTES, S3StorageDriver } from '@envengine/materialization-storage';
import { createTenant, makeBundle, startPoolWorker, uniqueName, until, type PoolWorker, type TestTenant } from '@envengine/test-harness';
import { ASSET_CODE, deployOnS3, issueCredential, runsManifest, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');
const AssetList = dataEnvelope(z.array(AssetListing));
const store = stack.objectStore!;

function s3Client(credentials: { accessKeyId: string; secretAccessKey: string }): S3Client {
  return new S3Client({
    endpoint: store.url,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
  });
}
const admin = s3Client(store);

/** The bytes of an object as the store's administrator reads them, or the store's error name. */
async function adminRead(bucket: string, key: string): Promise<Uint8Array | string> {
  try {
    return await (await admin.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToByteArray();
  } catch (error) {
    return (error as Error).name;
  }
}

/** What an S3 call with these keys does: `allowed`, or the store's error name. */
async function attempt(call: () => Promise<unknown>): Promise<string> {
  return call().then(
    () => 'allowed',
    (error: Error) => error.name,
  );
}

async function latestOf(tenant: TestTenant, key: string) {
  const assets = AssetList.parse((await tenant.api.get('/environments/prod/assets')).body).data;
  return assets.find((asset) => asset.key === key)?.latest_materialization ?? null;
}

async function runAssets(tenant: TestTenant, assets: string[]): Promise<Run> {
  const created = await tenant.api.post('/environments/prod/runs', { assets });
  expect(created.status).toBe(201);
  return waitForRun(tenant, Run.parse(created.body.data).id);
}

describe("s3:// storage on the engine's own store", () => {
  let tenant: TestTenant;

  beforeAll(async () => {
    tenant = await createTenant(stack, 's3-engine');
    // docs/operations.md's `s3://lake/prod`, with a binding that names no endpoint: the engine's store.
    await deployOnS3(tenant, 'prod', 's3://lake/prod', 'local');
  });

  it('writes each asset as Parquet under the tenant in the bucket, and ctx.read reads it back from there', async () => {
    const run = await runAssets(tenant, ['orders', 'totals']);
    expect(run.status).toBe('succeeded');
    const orders = (await latestOf(tenant, 'orders'))!;
    const totals = (await latestOf(tenant, 'totals'))!;
    expect(orders.location).toBe(`s3://lake/prod/orders/${orders.id}.parquet`);
    expect(orders.columns).toEqual([
      { name: 'id', type: 'integer', nullable: false },
      { name: 'amount', type: 'number', nullable: true },
    ]);
    // Stored under the tenant's own prefix of the bucket, and nowhere else.
    const stored = await adminRead('lake', `${tenant.tenantId}/prod/orders/${orders.id}.parquet`);
    expect(stored).toBeInstanceOf(Uint8Array);
    expect((stored as Uint8Array).byteLength).toBe(orders.bytes);
    expect(await adminRead('lake', `prod/orders/${orders.id}.parquet`)).toBe('NoSuchKey');
    // totals is what ctx.read gave it: the three orders summed.
    const totalsBytes = await adminRead('lake', `${tenant.tenantId}/prod/totals/${totals.id}.parquet`);
    expect(await decodeParquet(totalsBytes as Uint8Array)).toEqual([{ orders: 3, total: 30.5 }]);
  });

  it("lets a preview read its parent's objects through the parent's read-only keys, writing only under its own prefix", async () => {
    const created = await tenant.api.post('/environments', { name: 'pr-s3', kind: 'preview', parent: 'prod', executor: 'local' });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.storage_prefix).toBe('s3://lake/prod/previews/pr-s3');
    const bundle = (await tenant.api.request('POST', '/bundles', { raw: await makeBundle(ASSET_CODE), headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref as string;
    expect((await tenant.api.post('/environments/pr-s3/deployments', { manifest: runsManifest(), bundle_ref: bundle })).status).toBe(201);
    const parentOrders = (await latestOf(tenant, 'orders'))!;
    const started = await tenant.api.post('/environments/pr-s3/runs', { assets: ['totals'] });
    const run = await waitForRun(tenant, Run.parse(started.body.data).id);
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    expect(run.attempts[0]!.reads).toEqual([{ asset: 'totals', upstream: 'orders', materialization_id: parentOrders.id, environment: 'prod' }]);
    const [totals] = (await tenant.api.get('/environments/pr-s3/assets/totals/materializations')).body.data as Array<{ id: string; location: string }>;
    expect(totals!.location).toBe(`s3://lake/prod/previews/pr-s3/totals/${totals!.id}.parquet`);
    const stored = await adminRead('lake', `${tenant.tenantId}/prod/previews/pr-s3/totals/${totals!.id}.parquet`);
    expect(await decodeParquet(stored as Uint8Array)).toEqual([{ orders: 3, total: 30.5 }]);
    expect((await tenant.api.delete('/environments/pr-s3?force=true')).status).toBe(200);
  });

  it("gives a tenant's workers keys that reach only that tenant's objects, never the administrator's", async () => {
    const other = await createTenant(stack, 's3-engine-other');
    await deployOnS3(other, 'prod', 's3://lake/prod', 'local');
    expect((await runAssets(other, ['orders'])).status).toBe('succeeded');
    const othersOrders = (await latestOf(other, 'orders'))!;

    // The first tenant's pool worker, as an attacker holding its token: it takes a remote
    // attempt and asks for its storage keys, as the worker it is.
    const remote = await deployRemoteEnvironment(tenant, 'remote-keys');
    const credential = await issueCredential(tenant);
    const queued = Run.parse((await tenant.api.post(`/environments/${remote}/runs`, { assets: ['orders'] })).body.data);
    const pool = { authorization: `Bearer ${credential.token}`, 'content-type': 'application/json' };
    const worker = { id: 'keys-probe-1', name: 'keys-probe', executor: 'remote', concurrency: 1, sandbox: 'bwrap' };
    const attemptId = queued.attempts[0]!.id;
    const started = await fetch(`${stack.gatewayUrl}/api/v1/worker/attempts/${attemptId}/start`, { method: 'POST', headers: pool, body: JSON.stringify({ worker }) });
    expect(started.status).toBe(200);
    const { lease } = AttemptStarted.parse(((await started.json()) as { data: unknown }).data);
    const answer = await fetch(`${stack.gatewayUrl}/api/v1/worker/attempts/${attemptId}/storage`, {
      method: 'POST',
      headers: { ...pool, [ATTEMPT_LEASE_HEADER]: lease },
      body: JSON.stringify({ asset: 'orders' }),
    });
    expect(answer.status).toBe(200);
    const text = await answer.text();
    expect(text).not.toContain(store.secretAccessKey);
    expect(text).not.toContain(store.accessKeyId);
    const keys = StorageConnection.parse((JSON.parse(text) as { data: unknown }).data);
    if (keys.kind !== 's3') throw new Error('expected s3 keys');
    expect(keys).toMatchObject({ endpoint: store.url, key_prefix: `${tenant.tenantId}/`, binding: null });

    const mine = s3Client({ accessKeyId: keys.access_key_id, secretAccessKey: keys.secret_access_key });
    // Positive control: its environment's own prefix is writable and readable.
    const own = `${tenant.tenantId}/remote-keys/probe.txt`;
    expect(await attempt(() => mine.send(new PutObjectCommand({ Bucket: 'lake', Key: own, Body: 'mine' })))).toBe('allowed');
    expect(await attempt(() => mine.send(new GetObjectCommand({ Bucket: 'lake', Key: own })))).toBe('allowed');
    // The same tenant's other environment: its keys are another environment's.
    const prodOrders = (await latestOf(tenant, 'orders'))!;
    expect(await attempt(() => mine.send(new GetObjectCommand({ Bucket: 'lake', Key: `${tenant.tenantId}/prod/orders/${prodOrders.id}.parquet` })))).toBe('AccessDenied');
    expect(await attempt(() => mine.send(new PutObjectCommand({ Bucket: 'lake', Key: `${tenant.tenantId}/probe.txt`, Body: 'x' })))).toBe('AccessDenied');
    // The other tenant's objects: not readable, not overwritable, not listable.
    const othersKey = `${other.tenantId}/prod/orders/${othersOrders.id}.parquet`;
    expect(await attempt(() => mine.send(new GetObjectCommand({ Bucket: 'lake', Key: othersKey })))).toBe('AccessDenied');
    expect(await attempt(() => mine.send(new PutObjectCommand({ Bucket: 'lake', Key: othersKey, Body: 'x' })))).toBe('AccessDenied');
    expect(await attempt(() => mine.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: `${other.tenantId}/` })))).toBe('AccessDenied');
    // Nor a path that starts with the other tenant and ends in its own id.
    expect(await attempt(() => mine.send(new PutObjectCommand({ Bucket: 'lake', Key: `${other.tenantId}/${tenant.tenantId}/x`, Body: 'x' })))).toBe('AccessDenied');
    expect(await attempt(() => mine.send(new PutObjectCommand({ Bucket: 'lake', Key: 'top-level.txt', Body: 'x' })))).toBe('AccessDenied');
    expect(await attempt(() => mine.send(new CreateBucketCommand({ Bucket: 'mine-now' })))).toBe('AccessDenied');
    expect((await adminRead('lake', othersKey)) instanceof Uint8Array).toBe(true);
    // IAM: only the engine manages users, keys and policies, through an IAM API of the store's
    // own that tenants' keys never reach. The S3 endpoint the keys are handed out for has no IAM
    // API at all: SeaweedFS's lets a user mint keys for itself whatever its policy.
    const ownUser = `env-${Environment.parse((await tenant.api.get(`/environments/${remote}`)).body.data).id}-rw`;
    const keysOfUser = async () => [...(await iamCall(store.iamUrl, store, { Action: 'ListAccessKeys', UserName: ownUser })).text.matchAll(/<AccessKeyId>([^<]+)<\/AccessKeyId>/g)].map((match) => match[1]);
    // Positive control: the administrator's keys list the user's keys there.
    const keysBefore = await keysOfUser();
    expect(keysBefore).toContain(keys.access_key_id);
    for (const params of <Array<Record<string, string>>>[
      { Action: 'CreateAccessKey', UserName: ownUser },
      { Action: 'CreateAccessKey' },
      { Action: 'PutUserPolicy', UserName: ownUser, PolicyName: 'mine', PolicyDocument: JSON.stringify({ Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: ['s3:*'], Resource: ['arn:aws:s3:::*'] }] }) },
      { Action: 'CreateUser', UserName: 'escapee' },
      { Action: 'ListUsers' },
      { Action: 'CreateAccessKey', UserName: 'env-other-rw' },
    ]) {
      const answer = await iamCall(store.url, { accessKeyId: keys.access_key_id, secretAccessKey: keys.secret_access_key }, params);
      expect(answer.code, params['Action']).not.toBe('allowed');
      expect(answer.text, params['Action']).not.toMatch(/<(AccessKeyId|SecretAccessKey|UserName)>/);
    }
    // Not even the administrator's keys manage IAM there (so it is not the keys' policy that refuses).
    expect((await iamCall(store.url, store, { Action: 'ListAccessKeys', UserName: ownUser })).code).not.toBe('allowed');
    expect(await keysOfUser()).toEqual(keysBefore);
    expect((await iamCall(store.iamUrl, store, { Action: 'GetUser', UserName: 'escapee' })).code).toBe('NoSuchEntity');

    // A read_only binding's keys read and never write.
    expect((await tenant.api.put(`/environments/${remote}/bindings/warehouse`, { mode: 'read_only' })).status).toBe(200);
    const readOnly = StorageConnection.parse(
      (await tenant.api.withToken(credential.token).post(`/worker/attempts/${attemptId}/storage`, { asset: 'orders' }, { headers: { [ATTEMPT_LEASE_HEADER]: lease } })).body.data,
    );
    if (readOnly.kind !== 's3') throw new Error('expected s3 keys');
    expect(readOnly.access_key_id).not.toBe(keys.access_key_id);
    const reader = s3Client({ accessKeyId: readOnly.access_key_id, secretAccessKey: readOnly.secret_access_key });
    expect(await attempt(() => reader.send(new GetObjectCommand({ Bucket: 'lake', Key: own })))).toBe('allowed');
    expect(await attempt(() => reader.send(new PutObjectCommand({ Bucket: 'lake', Key: own, Body: 'overwritten' })))).toBe('AccessDenied');

    // The environment's delete removes its users from the store: every key they had is refused once it answers.
    const deleted = await until(async () => (await tenant.api.request('DELETE', `/environments/${remote}?force=true`)).status, (status) => status === 200, 60_000, 250);
    expect(deleted).toBe(200);
    for (const client of [mine, reader]) {
      expect(await attempt(() => client.send(new GetObjectCommand({ Bucket: 'lake', Key: own })))).toBe('InvalidAccessKeyId');
    }
    expect((await iamCall(store.iamUrl, store, { Action: 'GetUser', UserName: ownUser })).code).toBe('NoSuchEntity');
  });

  it("takes a revoked pool credential's store keys away at once, leaves another credential's, and lets none of them make keys", async () => {
    const remote = await deployRemoteEnvironment(tenant, 'revoke-keys');
    /** A worker of this credential takes one queued attempt and asks for its storage keys. */
    const keysOf = async (credential: PoolCredentialIssued, probe: string) => {
      const queued = Run.parse((await tenant.api.post(`/environments/${remote}/runs`, { assets: ['orders'] })).body.data);
      const pool = tenant.api.withToken(credential.token);
      const worker = { id: `${probe}-1`, name: probe, executor: 'remote', concurrency: 1, sandbox: 'bwrap' };
      const started = await pool.post(`/worker/attempts/${queued.attempts[0]!.id}/start`, { worker });
      expect(started.status).toBe(200);
      const { lease } = AttemptStarted.parse(started.body.data);
      const answer = await pool.post(`/worker/attempts/${queued.attempts[0]!.id}/storage`, { asset: 'orders' }, { headers: { [ATTEMPT_LEASE_HEADER]: lease } });
      expect(answer.status).toBe(200);
      const keys = StorageConnection.parse(answer.body.data);
      if (keys.kind !== 's3') throw new Error('expected s3 keys');
      return { accessKeyId: keys.access_key_id, secretAccessKey: keys.secret_access_key };
    };
    const revoked = await issueCredential(tenant);
    const kept = await issueCredential(tenant);
    const revokedKeys = await keysOf(revoked, 'revoked-probe');
    const keptKeys = await keysOf(kept, 'kept-probe');
    // Each credential's workers hold keys of their own.
    expect(revokedKeys.accessKeyId).not.toBe(keptKeys.accessKeyId);
    // The revoked credential's worker, as an attacker, tries to make a key for its environment's user.
    const ownUser = `env-${Environment.parse((await tenant.api.get(`/environments/${remote}`)).body.data).id}-rw`;
    expect((await iamCall(store.url, revokedKeys, { Action: 'CreateAccessKey', UserName: ownUser })).code).not.toBe('allowed');
    const own = `${tenant.tenantId}/${remote}/probe.txt`;
    expect(await adminRead('lake', own)).toBe('NoSuchKey');
    await admin.send(new PutObjectCommand({ Bucket: 'lake', Key: own, Body: 'probe' }));
    const reads = async () =>
      Promise.all([revokedKeys, keptKeys].map((keys) => attempt(() => s3Client(keys).send(new GetObjectCommand({ Bucket: 'lake', Key: own })))));
    // Positive control: both read the environment's objects before the revoke.
    expect(await reads()).toEqual(['allowed', 'allowed']);

    expect((await tenant.api.delete(`/pool/credentials/${revoked.id}`)).status).toBe(200);
    // At once, not after a sweep: the revoke answered once the S3 endpoint refused them.
    expect(await reads()).toEqual(['InvalidAccessKeyId', 'allowed']);
    // The engine's runner keeps its keys too: the local environment still writes to the store.
    expect((await runAssets(tenant, ['orders'])).status).toBe('succeeded');
  });

  it("purges, with ?purge_data=true, every file the engine wrote under the prefix, recorded or not, and nothing else", async () => {
    const name = uniqueName('purge');
    const base = `${tenant.tenantId}/${name}`;
    await deployOnS3(tenant, name, `s3://lake/${name}`, 'local');
    const created = await tenant.api.post(`/environments/${name}/runs`, { assets: ['orders', 'totals'] });
    expect((await waitForRun(tenant, Run.parse(created.body.data).id)).status).toBe('succeeded');
    const put = (key: string) => admin.send(new PutObjectCommand({ Bucket: 'lake', Key: key, Body: 'x' }));
    // Left by an earlier environment of this prefix (no record names it), beside what is not the engine's to remove:
    // another environment's prefix inside this one, a file the engine never writes, and another tenant's same path.
    await put(`${base}/orders/mat_01STRAYSTRAYSTRAYSTRAYSTRA.parquet`);
    await put(`${base}/nested/orders/mat_01NESTEDNESTEDNESTEDNESTE.parquet`);
    await put(`${base}/README.txt`);
    await put(`ten_someoneelse/${name}/orders/mat_01OTHEROTHEROTHEROTHEROT.parquet`);
    const keysUnder = async (prefix: string) =>
      ((await admin.send(new ListObjectsV2Command({ Bucket: 'lake', Prefix: prefix }))).Contents ?? []).map((object) => object.Key!).sort();
    expect((await keysUnder(`${base}/`)).filter((key) => /^[^/]+\/[^/]+\/(orders|totals)\/mat_[^/]+\.parquet$/.test(key))).toHaveLength(3);

    expect((await tenant.api.delete(`/environments/${name}?purge_data=true`)).status).toBe(200);
    expect(await keysUnder(`${base}/`)).toEqual([`${base}/README.txt`, `${base}/nested/orders/mat_01NESTEDNESTEDNESTEDNESTE.parquet`]);
    expect(await keysUnder(`ten_someoneelse/${name}/`)).toEqual([`ten_someoneelse/${name}/orders/mat_01OTHEROTHEROTHEROTHEROT.parquet`]);
  });

  // Found by the OpenAPI fuzzer: the purge read the bucket with the driver's parser, which
  // throws for a name it refuses, so the tear-down failed on every retry and never ended.
  it('deletes with ?purge_data=true an environment whose s3:// bucket name no driver takes (nothing was ever written there)', async () => {
    const name = uniqueName('oddbucket');
    expect((await tenant.api.post('/environments', { name, storage_prefix: 's3://0/p', executor: 'local' })).status).toBe(201);
    expect((await tenant.api.delete(`/environments/${name}?purge_data=true`)).status).toBe(200);
    expect((await tenant.api.get(`/environments/${name}`)).status).toBe(404);
  });
});

/** An IAM call signed with these keys, to this endpoint: `allowed` or the store's error code, and the answer's text. */
async function iamCall(endpoint: string, credentials: { accessKeyId: string; secretAccessKey: string }, params: Record<string, string>): Promise<{ code: string; text: string }> {
  const url = new URL(endpoint);
  const body = new URLSearchParams({ ...params, Version: '2010-05-08' }).toString();
  const signer = new SignatureV4({ credentials, region: 'us-east-1', service: 'iam', sha256: NodeSha256 });
  const signed = await signer.sign({
    method: 'POST',
    protocol: url.protocol,
    hostname: url.hostname,
    port: Number(url.port),
    path: '/',
    query: {},
    headers: { host: url.host, 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body,
  });
  const answer = await fetch(new URL('/', url), { method: 'POST', headers: signed.headers, body });
  const text = await answer.text();
  return { code: answer.ok ? 'allowed' : (/<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? `HTTP ${answer.status}`), text };
}

/** A `remote` environment on the engine's store with the runs project, for a pool to take attempts of. */
async function deployRemoteEnvironment(tenant: TestTenant, name: string): Promise<string> {
  await deployOnS3(tenant, name, `s3://lake/${name}`, 'remote');
  return name;
}


describe("s3:// storage on a tenant's own store, named by the binding", () => {
  let tenant: TestTenant;
  const mongo = new MongoClient(stack.mongoUrl);
  /** The tenant's own bucket and keys on the same SeaweedFS, made by its administrator. */
  const bucket = `own-${Date.now().toString(36)}`;

  beforeAll(async () => {
    tenant = await createTenant(stack, 's3-own');
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  });

  afterAll(async () => {
    await mongo.close();
  });

  async function environmentWith(name: string, prefix: string, config: Record<string, unknown>, secrets: Record<string, string>): Promise<void> {
    for (const [secret, value] of Object.entries(secrets)) {
      expect((await tenant.api.put(`/environments/${name}/secrets/${secret}`, { value })).status).toBeLessThan(300);
    }
    const secretRefs = Object.fromEntries(Object.keys(secrets).map((secret) => [secret.toLowerCase(), secret]));
    await tenant.api.put(`/environments/${name}/bindings/warehouse`, { config, secret_refs: secretRefs });
  }

  it('writes and reads through the endpoint and keys of the binding', async () => {
    await deployOnS3(tenant, 'prod', `s3://${bucket}/data`, 'local');
    await environmentWith('prod', `s3://${bucket}/data`, { endpoint: store.url, region: 'us-east-1', force_path_style: true }, {
      ACCESS_KEY_ID: store.accessKeyId,
      SECRET_ACCESS_KEY: store.secretAccessKey,
    });
    const run = await runAssets(tenant, ['orders', 'totals']);
    expect(run.status).toBe('succeeded');
    const totals = (await latestOf(tenant, 'totals'))!;
    expect(totals.location).toBe(`s3://${bucket}/data/totals/${totals.id}.parquet`);
    // Its own store has no tenant prefix: the key is the location's.
    expect(await decodeParquet((await adminRead(bucket, `data/totals/${totals.id}.parquet`)) as Uint8Array)).toEqual([{ orders: 3, total: 30.5 }]);
    // Neither key appears in the attempt's log.
    const logs = JSON.stringify((await tenant.api.get(`/runs/${run.id}/logs`)).body);
    expect(logs).not.toContain(store.secretAccessKey);
  });

  it.each([
    {
      title: 'an unknown bucket',
      prefix: 's3://no-such-bucket-here/data',
      config: { endpoint: store.url },
      secrets: { ACCESS_KEY_ID: store.accessKeyId, SECRET_ACCESS_KEY: store.secretAccessKey },
      error: /the bucket "no-such-bucket-here" does not exist \(NoSuchBucket\)/,
    },
    {
      title: 'a wrong secret key',
      prefix: `s3://${bucket}/wrong`,
      config: { endpoint: store.url },
      secrets: { ACCESS_KEY_ID: store.accessKeyId, SECRET_ACCESS_KEY: 'not-the-secret-key' },
      error: /the binding's secret_access_key does not match its access_key_id \(SignatureDoesNotMatch\)/,
    },
    {
      title: 'an unknown access key',
      prefix: `s3://${bucket}/unknown`,
      config: { endpoint: store.url },
      secrets: { ACCESS_KEY_ID: 'NOSUCHKEY0000000', SECRET_ACCESS_KEY: store.secretAccessKey },
      error: /does not know the binding's access_key_id \(InvalidAccessKeyId\)/,
    },
    {
      title: 'an endpoint without keys',
      prefix: `s3://${bucket}/nokeys`,
      config: { endpoint: store.url },
      secrets: {},
      error: /Storage binding "warehouse": names an endpoint but no access_key_id; add it to secret_refs/,
    },
    {
      title: 'keys without an endpoint',
      prefix: `s3://${bucket}/noendpoint`,
      config: {},
      secrets: { ACCESS_KEY_ID: store.accessKeyId, SECRET_ACCESS_KEY: store.secretAccessKey },
      error: /Storage binding "warehouse": names access keys but no endpoint/,
    },
    {
      title: 'an endpoint that is not a URL',
      prefix: `s3://${bucket}/badurl`,
      config: { endpoint: 'somewhere' },
      secrets: { ACCESS_KEY_ID: store.accessKeyId, SECRET_ACCESS_KEY: store.secretAccessKey },
      error: /Storage binding "warehouse": endpoint is not a URL/,
    },
    // The engine's runner connects from the engine host: a binding may not point it at the engine's own network.
    {
      title: "an endpoint on the engine's loopback",
      prefix: `s3://${bucket}/loopback`,
      config: { endpoint: stack.gatewayUrl },
      secrets: { ACCESS_KEY_ID: store.accessKeyId, SECRET_ACCESS_KEY: store.secretAccessKey },
      error: /endpoint 127\.0\.0\.1 is on the engine's own network/,
    },
    {
      title: 'a name that resolves to the loopback',
      prefix: `s3://${bucket}/localhost`,
      config: { endpoint: `http://localhost:${new URL(stack.gatewayUrl).port}` },
      secrets: { ACCESS_KEY_ID: store.accessKeyId, SECRET_ACCESS_KEY: store.secretAccessKey },
      error: /localhost: (127\.0\.0\.1|::1) is on the engine's own network/,
    },
    {
      title: 'the cloud metadata address',
      prefix: `s3://${bucket}/metadata`,
      config: { endpoint: 'http://169.254.169.254' },
      secrets: { ACCESS_KEY_ID: store.accessKeyId, SECRET_ACCESS_KEY: store.secretAccessKey },
      error: /endpoint 169\.254\.169\.254 is on the engine's own network/,
    },
  ] as Array<{ title: string; prefix: string; config: Record<string, unknown>; secrets: Record<string, string>; error: RegExp }>)('fails the asset with an error naming $title, and records nothing', async ({ prefix, config, secrets, error }) => {
    const name = `bad-${Math.random().toString(36).slice(2, 8)}`;
    await deployOnS3(tenant, name, prefix, 'local');
    await environmentWith(name, prefix, config, secrets);
    const created = await tenant.api.post(`/environments/${name}/runs`, { assets: ['orders'] });
    const run = await waitForRun(tenant, Run.parse(created.body.data).id);
    expect(run.status).toBe('failed');
    expect(run.attempts[0]!.assets[0]!.error).toMatch(error);
    for (const secret of Object.values(secrets)) expect(JSON.stringify(run)).not.toContain(secret);
    const assets = AssetList.parse((await tenant.api.get(`/environments/${name}/assets`)).body).data;
    expect(assets.find((asset) => asset.key === 'orders')?.latest_materialization ?? null).toBeNull();
    const recorded = await mongo.db(stack.databases['deployment-service']).collection('materializations').countDocuments({ tenant_id: tenant.tenantId, location: { $regex: `^${prefix}/` } });
    expect(recorded).toBe(0);
  });
});

describe('a remote pool stores through s3:// and a second worker reads it', () => {
  let tenant: TestTenant;
  let credential: PoolCredentialIssued;
  const workers: PoolWorker[] = [];

  beforeAll(async () => {
    tenant = await createTenant(stack, 's3-pool');
    await deployRemoteEnvironment(tenant, 'prod');
    credential = await issueCredential(tenant);
  });

  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.process.stop()));
  });

  it('runs orders → totals on one worker, then totals alone on another with its own cache', async () => {
    workers.push(await startPoolWorker(stack, credential, 's3-w1'));
    const first = await runAssets(tenant, ['orders', 'totals']);
    expect(first.status).toBe('succeeded');
    expect(first.attempts[0]).toMatchObject({ executor: 'remote', worker: 's3-w1' });
    await workers.shift()!.process.stop();

    // Its own bundle cache (by name) and its own tmp, where it stages its sandbox's runtime.
    const tmp = mkdtempSync(join(tmpdir(), 's3-w2-tmp-'));
    chmodSync(tmp, 0o755);
    workers.push(await startPoolWorker(stack, credential, 's3-w2', { TMPDIR: tmp }));
    const second = await runAssets(tenant, ['totals']);
    expect(second.status).toBe('succeeded');
    expect(second.attempts[0]).toMatchObject({ executor: 'remote', worker: 's3-w2' });
    const totals = (await latestOf(tenant, 'totals'))!;
    expect(totals.run_id).toBe(second.id);
    expect(await decodeParquet((await adminRead('lake', `${tenant.tenantId}/prod/totals/${totals.id}.parquet`)) as Uint8Array)).toEqual([{ orders: 3, total: 30.5 }]);
  });
});

describe('the s3:// driver on a file larger than a part', () => {
  const connection = { endpoint: store.url, region: 'us-east-1', forcePathStyle: true, accessKeyId: store.accessKeyId, secretAccessKey: store.secretAccessKey, keyPrefix: 'driver-test/' };

  it('uploads it in parts and reads back the same bytes, leaving no upload open', async () => {
    const driver = new S3StorageDriver('s3://lake/big', connection);
    const bytes = new Uint8Array(randomBytes(2 * S3_PART_BYTES + 12345));
    const location = 's3://lake/big/asset/mat_big.parquet';
    expect(await driver.write(location, bytes)).toEqual({ location, bytes: bytes.byteLength });
    expect(Buffer.compare(Buffer.from(await driver.read(location)), Buffer.from(bytes))).toBe(0);
    // A multipart object's ETag names its part count: three parts of 8 MiB at most.
    const head = await admin.send(new HeadObjectCommand({ Bucket: 'lake', Key: 'driver-test/big/asset/mat_big.parquet' }));
    expect(head.ETag).toMatch(/-3"?$/);
    const open = await admin.send(new ListMultipartUploadsCommand({ Bucket: 'lake', Prefix: 'driver-test/' }));
    expect(open.Uploads ?? []).toEqual([]);
  });

  it('leaves no object and no open upload when the store refuses a large write', async () => {
    // Keys to the engine's store that reach only one tenant's prefix, writing outside it.
    const tenant = await createTenant(stack, 's3-driver');
    const remote = await deployRemoteEnvironment(tenant, 'driver-keys');
    const credential = await issueCredential(tenant);
    const queued = Run.parse((await tenant.api.post(`/environments/${remote}/runs`, { assets: ['orders'] })).body.data);
    const pool = tenant.api.withToken(credential.token);
    const attemptId = queued.attempts[0]!.id;
    const started = await pool.post(`/worker/attempts/${attemptId}/start`, { worker: { id: 'driver-probe-1', name: 'driver-probe', executor: 'remote', concurrency: 1, sandbox: 'bwrap' } });
    const { lease } = AttemptStarted.parse(started.body.data);
    const keys = StorageConnection.parse((await pool.post(`/worker/attempts/${attemptId}/storage`, { asset: 'orders' }, { headers: { [ATTEMPT_LEASE_HEADER]: lease } })).body.data);
    if (keys.kind !== 's3') throw new Error('expected s3 keys');
    const outside = new S3StorageDriver('s3://lake/elsewhere', { ...connection, accessKeyId: keys.access_key_id, secretAccessKey: keys.secret_access_key, keyPrefix: 'not-the-tenant/' });
    const bytes = new Uint8Array(randomBytes(S3_PART_BYTES + 1));
    const error = await outside.write('s3://lake/elsewhere/x.parquet', bytes).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ObjectStoreError);
    expect((error as Error).message).toMatch(/the credentials may not do this there \(AccessDenied\)/);
    expect((error as Error).message).not.toContain(keys.secret_access_key);
    expect(await adminRead('lake', 'not-the-tenant/elsewhere/x.parquet')).toBe('NoSuchKey');
    const open = await admin.send(new ListMultipartUploadsCommand({ Bucket: 'lake', Prefix: 'not-the-tenant/' }));
    expect(open.Uploads ?? []).toEqual([]);
  });
});
