import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ErrorBody, INTERNAL_HEADERS, RESOLVER_CALLER_HEADER, ResolvedBinding, dataEnvelope } from '@envengine/contracts';
import { SecretResolverClient } from '@envengine/service-clients';
import { callResolve, createTenant, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

describe('binding resolution for workers (internal)', () => {
  let tenant: TestTenant;
  let environmentId: string;
  let mongo: MongoClient;
  const audit = () => mongo.db(stack.databases['secrets-service']).collection('secret_audit');

  beforeAll(async () => {
    tenant = await createTenant(stack, 'resolve');
    mongo = await new MongoClient(stack.mongoUrl).connect();
    environmentId = (await tenant.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/p', executor: 'remote' })).body.data.id;
    await tenant.api.put('/environments/prod/secrets/db-password', { value: 'pw-v1' });
    await tenant.api.put('/environments/prod/secrets/db-password', { value: 'pw-v2' });
    await tenant.api.put('/environments/prod/secrets/api-token', { value: 'tok-v1' });
    await tenant.api.put('/environments/prod/bindings/warehouse', {
      config: { host: 'db.internal', port: 5432 },
      secret_refs: { password: 'db-password', token: 'api-token' },
      mode: 'read_only',
    });
  });
  afterAll(async () => {
    await mongo?.close();
  });

  it('returns the config with the latest secret values, and audits who read which versions', async () => {
    const response = await callResolve(stack, {
      tenantId: tenant.tenantId,
      caller: 'attempt-worker/host-a/1234',
      body: { environment_id: environmentId, binding: 'warehouse', attempt_id: 'att_test1' },
    });
    expect(response.status).toBe(200);
    const resolved = dataEnvelope(ResolvedBinding).parse(response.body).data;
    expect(resolved).toEqual({
      name: 'warehouse',
      mode: 'read_only',
      config: { host: 'db.internal', port: 5432, password: 'pw-v2', token: 'tok-v1' },
      secret_versions: [
        { setting: 'password', secret: 'db-password', version: 2 },
        { setting: 'token', secret: 'api-token', version: 1 },
      ],
    });

    const record = await audit().findOne({ kind: 'resolve', attempt_id: 'att_test1' });
    expect(record).toMatchObject({
      tenant_id: tenant.tenantId,
      environment_id: environmentId,
      caller: 'attempt-worker/host-a/1234',
      binding: 'warehouse',
      outcome: 'resolved',
      secrets: [
        { setting: 'password', secret: 'db-password', version: 2 },
        { setting: 'token', secret: 'api-token', version: 1 },
      ],
    });
    expect(record!.at).toBeInstanceOf(Date);
    expect(JSON.stringify(record)).not.toMatch(/pw-v|tok-v/);
  });

  it('answers the same through SecretResolverClient, the client the attempt runner uses', async () => {
    const client = new SecretResolverClient({ origins: [stack.urls['secrets-service']], credential: stack.resolverCredential }, 'attempt-worker/host-b/42');
    try {
      const resolved = await client.resolve(tenant.tenantId, { environment_id: environmentId, binding: 'warehouse', attempt_id: 'att_client' });
      expect(resolved.config).toEqual({ host: 'db.internal', port: 5432, password: 'pw-v2', token: 'tok-v1' });
      expect(await audit().findOne({ attempt_id: 'att_client' })).toMatchObject({ caller: 'attempt-worker/host-b/42', outcome: 'resolved' });
    } finally {
      await client.close();
    }
  });

  it('fails with a clear error naming the secret a binding refers to after it was deleted', async () => {
    await tenant.api.put('/environments/prod/secrets/temp', { value: 'temp-value' });
    await tenant.api.put('/environments/prod/bindings/fragile', { secret_refs: { key: 'temp' } });
    await tenant.api.delete('/environments/prod/secrets/temp');
    const response = await callResolve(stack, { tenantId: tenant.tenantId, body: { environment_id: environmentId, binding: 'fragile', attempt_id: 'att_test2' } });
    expect(response.status).toBe(422);
    const error = ErrorBody.parse(response.body).error;
    expect(error.code).toBe('unknown_secret');
    expect(error.message).toContain('"temp"');
    expect(response.text).not.toContain('temp-value');
    expect(await audit().findOne({ attempt_id: 'att_test2' })).toMatchObject({ outcome: 'refused', binding: 'fragile' });
  });

  it('answers 404 for an unknown binding or environment', async () => {
    for (const body of [
      { environment_id: environmentId, binding: 'nope' },
      { environment_id: 'env_0000000000000000000000zzzz', binding: 'warehouse' },
    ]) {
      const response = await callResolve(stack, { tenantId: tenant.tenantId, body });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('not_found');
    }
  });

  it('refuses the gateway\'s credential, no credential, and a caller that does not name itself', async () => {
    const body = { environment_id: environmentId, binding: 'warehouse' };
    const wrong = await callResolve(stack, { tenantId: tenant.tenantId, body, credential: 'x'.repeat(64) });
    expect(wrong.status).toBe(401);
    const none = await fetch(`${stack.urls['secrets-service']}/internal/v1/bindings/resolve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [INTERNAL_HEADERS.tenantId]: tenant.tenantId },
      body: JSON.stringify(body),
    });
    expect(none.status).toBe(401);
    const anonymous = await callResolve(stack, { tenantId: tenant.tenantId, body, caller: null });
    expect(anonymous.status).toBe(422);
    expect(anonymous.text).not.toContain('pw-v2');
    for (const response of [wrong, anonymous]) expect(response.text).not.toContain('pw-v2');
  });

  it('is not reachable through the gateway', async () => {
    for (const path of ['/internal/v1/bindings/resolve', '/api/v1/../internal/v1/bindings/resolve', '/api/v1/internal/v1/bindings/resolve']) {
      const response = await fetch(`${stack.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ environment_id: environmentId, binding: 'warehouse' }),
      });
      expect(response.status, path).toBe(404);
      expect(await response.text()).not.toContain('pw-v2');
    }
  });

  it("gives an attempt's plan the binding modes by environment id: names and modes only, behind the resolver credential", async () => {
    const client = new SecretResolverClient({ origins: [stack.urls['secrets-service']], credential: stack.resolverCredential }, 'attempt-worker/test');
    try {
      const modes = await client.bindingModes(tenant.tenantId, environmentId);
      expect(modes).toContainEqual({ name: 'warehouse', mode: 'read_only' });
      // Names and modes only: no settings, no secret values.
      for (const entry of modes) expect(Object.keys(entry).sort()).toEqual(['mode', 'name']);
      expect(JSON.stringify(modes)).not.toContain('pw-v2');
      // Another tenant naming this environment's id gets its own (none), never this tenant's.
      const other = await createTenant(stack, 'resolve-other');
      expect(await client.bindingModes(other.tenantId, environmentId)).toEqual([]);
    } finally {
      await client.close();
    }
    const path = `/internal/v1/environments/${environmentId}/binding-modes`;
    for (const credential of [stack.internalCredential, undefined]) {
      const refused = await fetch(`${stack.urls['secrets-service']}${path}`, {
        headers: { [INTERNAL_HEADERS.tenantId]: tenant.tenantId, ...(credential ? { [INTERNAL_HEADERS.credential]: credential } : {}) },
      });
      expect(refused.status).toBe(401);
    }
    const throughGateway = await fetch(`${stack.gatewayUrl}${path}`, { headers: { authorization: `Bearer ${tenant.token}` } });
    expect(throughGateway.status).toBe(404);
    const malformed = await fetch(`${stack.urls['secrets-service']}/internal/v1/environments/prod/binding-modes`, {
      headers: { [INTERNAL_HEADERS.tenantId]: tenant.tenantId, [INTERNAL_HEADERS.credential]: stack.resolverCredential, [RESOLVER_CALLER_HEADER]: 'api-e2e/test' },
    });
    expect(malformed.status).toBe(422);
  });

  it('refuses bad input with 422', async () => {
    for (const body of [{}, { environment_id: environmentId }, { environment_id: 'prod', binding: 'warehouse' }, { environment_id: environmentId, binding: 'warehouse', extra: 1 }]) {
      const response = await callResolve(stack, { tenantId: tenant.tenantId, body });
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body.error.code).toBe('invalid_request');
    }
  });
});
