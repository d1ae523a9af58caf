import { MongoClient } from 'mongodb';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { PublicApi, Scope, type Endpoint } from '@envengine/contracts';
import { createTenant, deployProject, makeBundle, manifestOf, until, type ApiClient, type ApiResponse, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

interface DocumentOperation {
  method: string;
  path: string;
  operationId: string;
  security: Array<Record<string, string[]>>;
}

/** Every operation of the served OpenAPI document, with the security requirement it states. */
async function documentOperations(): Promise<DocumentOperation[]> {
  const document = (await (await fetch(`${stack.gatewayUrl}/api/v1/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { operationId: string; security: Array<Record<string, string[]>> }>>;
  };
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ method: method.toUpperCase(), path, operationId: operation.operationId, security: operation.security })),
  );
}

/** A token of the tenant made through the API by `minter`: its client, id and body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the answer is read field by field, as the raw client gives it
async function mint(minter: ApiClient, request: Record<string, unknown>): Promise<{ api: ApiClient; id: string; response: ApiResponse<any> }> {
  const response = await minter.post('/tokens', request);
  expect(response.status, response.text).toBe(201);
  return { api: minter.withToken(response.body.data.token as string), id: response.body.data.id as string, response };
}

describe('scoped tokens: every operation declares its scope, and the gateway holds it', () => {
  let tenant: TestTenant;
  let bundle: Uint8Array;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'scopes');
    bundle = await makeBundle({ 'assets/a.js': 'export default async () => {};' });
  });

  /** One request for the operation: names and ids that do not exist, and an empty body, so that nothing changes but what the route must. */
  const call = (api: ApiClient, operation: DocumentOperation) => {
    const path = operation.path.replace(/\{([a-z_]+)\}/gi, (_match, name: string) => (name === 'name' ? 'nowhere-env' : `${name}_none`));
    if (operation.operationId === 'uploadBundle') return api.request('POST', path, { raw: bundle, headers: { 'content-type': 'application/gzip' } });
    const hasBody = ['POST', 'PUT', 'PATCH'].includes(operation.method);
    return api.request(operation.method, path, hasBody ? { json: {} } : {});
  };

  it('with exactly its scope each operation passes the gateway, and with every scope but that one it is 403 naming the scope', async () => {
    const operations = (await documentOperations()).filter((operation) => operation.security.some((requirement) => 'apiToken' in requirement));
    // The document carries every API-token operation of PublicApi, each with one scope: the one PublicApi declares.
    const declared = (Object.entries(PublicApi) as [string, Endpoint][]).filter(([, endpoint]) => endpoint.auth === 'api_token');
    expect(operations.map((operation) => operation.operationId).sort()).toEqual(declared.map(([id]) => id).sort());
    for (const operation of operations) expect(operation.security).toEqual([{ apiToken: [(PublicApi as Record<string, Endpoint>)[operation.operationId]!.scope] }]);

    const only = new Map<string, ApiClient>();
    const allBut = new Map<string, ApiClient>();
    for (const scope of Scope.options) {
      only.set(scope, (await mint(tenant.api, { name: `only ${scope}`, scopes: [scope] })).api);
      allBut.set(scope, (await mint(tenant.api, { name: `all but ${scope}`, scopes: Scope.options.filter((other) => other !== scope) })).api);
    }

    const passed: string[] = [];
    const refused: string[] = [];
    for (const operation of operations) {
      const scope = operation.security[0]!.apiToken![0]!;
      const withScope = await call(only.get(scope)!, operation);
      // The route's own answer: a success, or a 4xx of its own (a name that does not exist, a body it refuses); never the gateway's 401 or 403.
      if (withScope.status !== 401 && withScope.status !== 403 && withScope.status < 500) passed.push(operation.operationId);
      else passed.push(`${operation.operationId} answered ${withScope.status}: ${withScope.text.slice(0, 200)}`);

      const without = await call(allBut.get(scope)!, operation);
      // A HEAD answer has no body to name the scope in.
      if (operation.method === 'HEAD' && without.status === 403) {
        refused.push(operation.operationId);
        continue;
      }
      const error = without.body?.error as { code: string; message: string; details: Array<{ message: string }> } | undefined;
      if (without.status === 403 && error?.code === 'insufficient_scope' && error.message.includes(`"${scope}"`)) refused.push(operation.operationId);
      else refused.push(`${operation.operationId} answered ${without.status}: ${without.text.slice(0, 200)}`);
    }
    expect(passed).toEqual(operations.map((operation) => operation.operationId));
    expect(refused).toEqual(operations.map((operation) => operation.operationId));
  });

  it('a role is its named set of scopes: a viewer reads and is refused every write', async () => {
    const viewer = await mint(tenant.api, { name: 'dashboard', role: 'viewer' });
    expect(viewer.response.body.data).toMatchObject({ role: 'viewer', scopes: ['environments:read', 'runs:read', 'events:read'], environments: null, expires_at: null });
    expect((await viewer.api.get('/environments')).status).toBe(200);
    expect((await viewer.api.get('/events')).status).toBe(200);
    const refused = await viewer.api.post('/environments', { name: 'by-viewer', storage_prefix: 's3://lake/v/v', executor: 'local' });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('"environments:write"');
    // Nothing was made.
    expect((await tenant.api.get('/environments/by-viewer')).status).toBe(404);
  });
});

describe('a token limited to environments', () => {
  let tenant: TestTenant;
  let restricted: ApiClient;
  let restrictedId: string;
  let prodRunId: string;
  let prodDeploymentId: string;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'restricted');
    // prod, with a deployment and a queued run (remote: no worker takes it), and a preview the token may see.
    await deployProject(tenant.api, {
      environment: 'prod',
      storagePrefix: 's3://lake/r/prod',
      executor: 'remote',
      bindings: { warehouse: {} },
      files: { 'assets/a.js': 'export default async () => {};' },
      manifest: { ...manifestOf([{ key: 'a' }]), schedules: [] },
    });
    const run = await tenant.api.post('/environments/prod/runs', { job: 'all' });
    expect(run.status, run.text).toBe(201);
    prodRunId = run.body.data.id as string;
    prodDeploymentId = (await tenant.api.get('/environments/prod/deployments')).body.data[0].id as string;
    expect((await tenant.api.post('/environments', { name: 'pr-1', storage_prefix: 's3://lake/r/pr-1', executor: 'remote' })).status).toBe(201);
    expect((await tenant.api.put('/environments/prod/secrets/db', { value: 'x' })).status).toBe(201);
    const minted = await mint(tenant.api, {
      name: 'ci previews',
      scopes: ['environments:read', 'environments:write', 'deployments:write', 'runs:read', 'runs:write', 'secrets:write', 'events:read', 'tokens:admin', 'pool:admin'],
      environments: ['pr-*'],
    });
    restricted = minted.api;
    restrictedId = minted.id;
  });

  it('sees only its environments, in lists, by name and by id; outside, they do not exist', async () => {
    expect((await restricted.get('/environments')).body.data.map((environment: { name: string }) => environment.name)).toEqual(['pr-1']);
    expect((await restricted.get('/environments/pr-1')).status).toBe(200);
    for (const path of ['/environments/prod', '/environments/prod/secrets', '/environments/prod/runs', '/environments/prod/deployments', '/environments/prod/assets', `/runs/${prodRunId}`, `/runs/${prodRunId}/logs`, `/deployments/${prodDeploymentId}`]) {
      const response = await restricted.get(path);
      expect([path, response.status, response.body.error?.code]).toEqual([path, 404, 'not_found']);
    }
    // Its quotas name no environment outside it (prod holds a queued run and a secret).
    const quotas = (await restricted.get('/quotas')).body.data;
    expect(Object.keys(quotas.queued_runs_per_environment.by_environment)).toEqual([]);
    expect(Object.keys(quotas.secrets_per_environment.by_environment)).toEqual([]);
    expect(Object.keys((await tenant.api.get('/quotas')).body.data.secrets_per_environment.by_environment)).toEqual(['prod']);
    // Answered exactly as for a name the tenant does not have.
    const missing = await restricted.get('/environments/prod');
    const absent = await tenant.api.get('/environments/nothing-here');
    expect(missing.body.error.message).toBe(absent.body.error.message.replace('nothing-here', 'prod'));

    // Writes outside are refused the same way, and change nothing.
    expect((await restricted.post(`/runs/${prodRunId}/cancel`)).status).toBe(404);
    expect((await restricted.post(`/deployments/${prodDeploymentId}/activate`)).status).toBe(404);
    expect((await restricted.delete('/environments/prod/secrets/db')).status).toBe(404);
    expect((await restricted.delete('/environments/prod')).status).toBe(404);
    expect((await tenant.api.get(`/runs/${prodRunId}`)).body.data.status).toBe('queued');
    expect((await tenant.api.get('/environments/prod/secrets')).body.data.map((secret: { name: string }) => secret.name)).toEqual(['db']);
    expect((await tenant.api.get('/environments/prod')).status).toBe(200);
  });

  it('a pr-* token makes pr-7 and cannot make prod-2; its events are only its environments\'', async () => {
    const created = await restricted.post('/environments', { name: 'pr-7', storage_prefix: 's3://lake/r/pr-7', executor: 'remote' });
    expect(created.status, created.text).toBe(201);
    const outside = await restricted.post('/environments', { name: 'prod-2', storage_prefix: 's3://lake/r/prod-2', executor: 'remote' });
    expect(outside.status).toBe(403);
    expect(outside.body.error.code).toBe('insufficient_scope');
    expect((await tenant.api.get('/environments/prod-2')).status).toBe(404);

    const events = (await restricted.get('/events?limit=200')).body.data as Array<{ environment: string | null; type: string; actor: string }>;
    expect(events.length).toBeGreaterThan(0);
    expect(events.filter((event) => event.environment === null || !event.environment.startsWith('pr-'))).toEqual([]);
    expect((await restricted.get('/events?environment=prod')).body.data).toEqual([]);
    // The creation it made records its token as the actor.
    expect(events.find((event) => event.type === 'environment.created' && event.environment === 'pr-7')?.actor).toBe(restrictedId);
  });

  it('is refused what spans the tenant: its pool, every environment\'s placement, webhooks', async () => {
    for (const [method, path] of [['GET', '/pool'], ['POST', '/pool/credentials'], ['POST', '/placement'], ['GET', '/webhooks']] as const) {
      const response = await restricted.request(method, path, method === 'POST' ? { json: { executor: 'local' } } : {});
      expect([path, response.status, response.body.error?.code]).toEqual([path, 403, 'insufficient_scope']);
    }
    expect((await tenant.api.get('/pool')).body.data.credentials).toEqual([]);
  });

  it('mints only within its own grant, and sees and revokes only such tokens', async () => {
    const beyond = [
      { name: 'more scopes', scopes: ['runs:read', 'bindings:write'], environments: ['pr-7'] },
      { name: 'admin role', role: 'admin', environments: ['pr-7'] },
      { name: 'every environment', scopes: ['runs:read'] },
      { name: 'prod', scopes: ['runs:read'], environments: ['prod'] },
      { name: 'wider pattern', scopes: ['runs:read'], environments: ['p*'] },
    ];
    for (const request of beyond) {
      const response = await restricted.post('/tokens', request);
      expect([request.name, response.status, response.body.error?.code]).toEqual([request.name, 403, 'insufficient_scope']);
    }
    const narrower = await mint(restricted, { name: 'one preview', scopes: ['runs:read'], environments: ['pr-7', 'pr-8*'] });
    expect(narrower.response.body.data).toMatchObject({ scopes: ['runs:read'], environments: ['pr-7', 'pr-8*'], created_by: restrictedId });

    // Its list holds itself and what it made, never the admin token that made it.
    const listed = (await restricted.get('/tokens')).body.data.map((token: { id: string }) => token.id);
    expect(listed.sort()).toEqual([restrictedId, narrower.id].sort());
    expect((await tenant.api.get('/tokens')).body.data.map((token: { id: string }) => token.id)).toContain(tenant.tokenId);
    const revokeAdmin = await restricted.delete(`/tokens/${tenant.tokenId}`);
    expect(revokeAdmin.status).toBe(404);
    expect((await tenant.api.get('/environments')).status).toBe(200);

    expect((await narrower.api.get('/environments/pr-7/runs')).status).toBe(200);
    expect((await restricted.delete(`/tokens/${narrower.id}`)).status).toBe(200);
    expect((await narrower.api.get('/environments/pr-7/runs')).status).toBe(401);
  });
});

describe('token lifetimes', () => {
  let tenant: TestTenant;
  let mongo: MongoClient;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'lifetimes');
    mongo = await new MongoClient(stack.mongoUrl).connect();
    return () => mongo.close();
  });

  it('lists names, grants and use, never a token; a revocation holds at once on this gateway', async () => {
    const ci = await mint(tenant.api, { name: 'ci', role: 'deployer', environments: ['pr-*'], expires_in_days: 7 });
    const body = ci.response.body.data;
    expect(body).toMatchObject({ name: 'ci', role: 'deployer', environments: ['pr-*'], created_by: tenant.tokenId, last_used_at: null });
    const days = (Date.parse(body.expires_at) - Date.parse(body.created_at)) / 86_400_000;
    expect(days).toBeCloseTo(7, 3);
    expect((await ci.api.get('/environments')).status).toBe(200);

    // Its use is written in a batch a moment later (every 200 ms on the test stack).
    const listed = await until(
      () => tenant.api.get('/tokens'),
      (response) => response.body.data.find((token: { id: string }) => token.id === ci.id)?.last_used_at !== null,
      20_000,
      100,
    );
    expect(listed.text).not.toContain(body.token);
    const { last_used_at: lastUsed, ...shown } = listed.body.data.find((token: { id: string }) => token.id === ci.id);
    const { token: _token, last_used_at: _never, ...created } = body;
    expect(shown).toEqual(created);
    expect(Date.parse(lastUsed)).toBeGreaterThanOrEqual(Date.parse(body.created_at));
    for (const token of listed.body.data) expect(Object.keys(token).sort()).toEqual(['created_at', 'created_by', 'environments', 'expires_at', 'id', 'last_used_at', 'name', 'role', 'scopes']);

    const revoked = await tenant.api.delete(`/tokens/${ci.id}`);
    expect(revoked.status).toBe(200);
    expect((await ci.api.get('/environments')).status).toBe(401);
    expect((await tenant.api.delete(`/tokens/${ci.id}`)).status).toBe(404);
    expect((await tenant.api.get('/tokens')).body.data.map((token: { id: string }) => token.id)).not.toContain(ci.id);

    const events = (await tenant.api.get(`/events?subject=${ci.id}`)).body.data as Array<{ type: string; actor: string; data: Record<string, unknown> }>;
    expect(events.map((event) => [event.type, event.actor])).toEqual([['token.revoked', tenant.tokenId], ['token.created', tenant.tokenId]]);
    expect(events[1]!.data).toMatchObject({ label: 'ci', role: 'deployer', environments: ['pr-*'] });
  });

  it('an expired token is refused 401 token_expired', async () => {
    const expiring = await mint(tenant.api, { name: 'short', role: 'viewer', expires_in_days: 1 });
    // A day is long for a test: its expiry is moved into the past before the token is first used (and cached).
    const updated = await mongo
      .db(stack.databases.gateway)
      .collection('api_tokens')
      .updateOne({ _id: expiring.id as never }, { $set: { expires_at: new Date(Date.now() - 1000) } });
    expect(updated.modifiedCount).toBe(1);
    const refused = await expiring.api.get('/environments');
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('token_expired');
    // A token that expires makes none that outlives it.
    const live = await mint(tenant.api, { name: 'a day', role: 'viewer', expires_in_days: 1 });
    const outliving = await live.api.post('/tokens', { name: 'longer', role: 'viewer', expires_in_days: 2 });
    expect(outliving.status).toBe(403);
  });

  it('refuses bad input with a clear error and makes nothing', async () => {
    const before = (await tenant.api.get('/tokens')).body.data.length;
    for (const request of [
      {},
      { name: 'x' },
      { name: 'x', role: 'viewer', scopes: ['runs:read'] },
      { name: 'x', scopes: ['secrets:read'] },
      { name: 'x', role: 'owner' },
      { name: 'x', role: 'viewer', environments: ['*'] },
      { name: 'x', role: 'viewer', environments: [] },
      { name: 'x', role: 'viewer', expires_in_days: 0 },
      { name: '', role: 'viewer' },
      { name: 'x', role: 'viewer', tenant_id: 'ten_x' },
    ]) {
      const response = await tenant.api.post('/tokens', request);
      expect([JSON.stringify(request), response.status, response.body.error?.code]).toEqual([JSON.stringify(request), 422, 'invalid_request']);
    }
    const keyed = await tenant.api.post('/tokens', { name: 'x', role: 'viewer' }, { headers: { 'Idempotency-Key': 'k1' } });
    expect(keyed.status).toBe(422);
    expect(keyed.body.error.details[0].path).toBe('Idempotency-Key');
    expect((await tenant.api.delete('/tokens/not-a-token-id')).status).toBe(404);
    expect((await tenant.api.get('/tokens')).body.data.length).toBe(before);
  });

  it("another tenant's tokens are unknown: not listed, not revocable", async () => {
    const other = await createTenant(stack, 'lifetimes-other');
    const victim = await mint(tenant.api, { name: 'victim', role: 'viewer' });
    expect((await other.api.get('/tokens')).body.data.map((token: { id: string }) => token.id)).toEqual([other.tokenId]);
    expect((await other.api.delete(`/tokens/${victim.id}`)).status).toBe(404);
    expect((await victim.api.get('/environments')).status).toBe(200);
  });
});

describe('the live tokens of a tenant are bounded', () => {
  it('refuses a mint past the tenant’s live tokens with 429 tokens_quota_exceeded, takes one again once one is revoked, and leaves other tenants alone', async () => {
    const tenant = await createTenant(stack, 'token-quota');
    const other = await createTenant(stack, 'token-quota-other');
    // The suite's gateway runs the default, TOKENS_PER_TENANT = 100: the tenant's first token counts.
    const minted: string[] = [];
    for (let index = 1; index < 100; index++) minted.push((await mint(tenant.api, { name: `t${index}`, role: 'viewer' })).id);
    const refused = await tenant.api.post('/tokens', { name: 'one too many', role: 'viewer' });
    expect([refused.status, refused.body.error?.code]).toEqual([429, 'tokens_quota_exceeded']);
    expect(refused.body.error.message).toMatch(/100 live tokens/);
    expect((await tenant.api.get('/tokens')).body.data).toHaveLength(100);
    // Another tenant mints as before.
    await mint(other.api, { name: 'unaffected', role: 'viewer' });
    expect((await tenant.api.delete(`/tokens/${minted[0]}`)).status).toBe(200);
    await mint(tenant.api, { name: 'in its place', role: 'viewer' });
  }, 120_000);
});
