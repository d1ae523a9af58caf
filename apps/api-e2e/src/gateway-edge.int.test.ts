import { request as httpRequest } from 'node:http';
import { describe, expect, inject, it } from 'vitest';
import { ErrorBody, PublicApi } from '@envengine/contracts';
import { serializedOpenApiDocument } from '@envengine/openapi-document';
import { ApiClient, createTenant, revokeToken } from '@envengine/test-harness';
import { issueCredential } from './runs-fixtures.ts';

const stack = inject('stack');

describe('the gateway edge', () => {
  it('serves /healthz and /readyz without a token', async () => {
    const health = await fetch(`${stack.gatewayUrl}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`${stack.gatewayUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ data: { status: 'ok', checks: { mongodb: 'ok', redis: 'ok' } } });
  });

  it('serves the OpenAPI document without a token, the one the build writes to docs/openapi.json', async () => {
    const response = await fetch(`${stack.gatewayUrl}/api/v1/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const served = await response.text();
    expect(served === serializedOpenApiDocument()).toBe(true);
    expect(JSON.parse(served)).toMatchObject({ openapi: '3.1.1', servers: [{ url: '/api/v1' }] });
    // Only GET: the path is not a way around the token for anything else.
    expect((await fetch(`${stack.gatewayUrl}/api/v1/openapi.json`, { method: 'POST' })).status).toBe(401);
  });

  it('keeps a well-formed X-Request-Id and makes one otherwise', async () => {
    const tenant = await createTenant(stack, 'request-id');
    const kept = await tenant.api.get('/environments', { headers: { 'x-request-id': 'ci-run-42.step-7' } });
    expect(kept.headers.get('x-request-id')).toBe('ci-run-42.step-7');
    const made = await tenant.api.get('/environments', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(made.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{24}$/);
  });

  it('answers 405 with Allow for a method a declared path does not have, TRACE and OPTIONS included, and 404 for a path it does not have', async () => {
    const tenant = await createTenant(stack, 'methods');
    const pool = await issueCredential(tenant);
    /** Any method (fetch refuses TRACE), with a token; the status, Allow and the body's error code. */
    const ask = (method: string, path: string, token: string) =>
      new Promise<{ status: number; allow: string | undefined; code: string | undefined }>((resolve, reject) => {
        const sent = httpRequest(`${stack.gatewayUrl}/api/v1${path}`, { method, headers: { authorization: `Bearer ${token}` } }, (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => {
            const code = text ? (ErrorBody.safeParse(JSON.parse(text)).data?.error.code ?? undefined) : undefined;
            resolve({ status: response.statusCode!, allow: response.headers.allow, code });
          });
        });
        sent.on('error', reject);
        sent.end();
      });
    const declared = new Map<string, Set<string>>();
    for (const endpoint of Object.values(PublicApi)) {
      const path = endpoint.path.replace(/:[a-z_]+/g, 'x1');
      declared.set(path, (declared.get(path) ?? new Set()).add(endpoint.method.toUpperCase()));
    }
    let asked = 0;
    for (const [path, methods] of declared) {
      const allow = [...methods, ...(methods.has('GET') ? ['HEAD'] : [])].sort().join(', ');
      const token = path.startsWith('/worker/') ? pool.token : tenant.token;
      const undeclared = ['DELETE', 'PATCH', 'PUT', 'POST', 'GET'].find((method) => !methods.has(method))!;
      for (const method of [undeclared, 'TRACE', 'OPTIONS']) {
        expect([method, path, await ask(method, path, token)]).toEqual([method, path, { status: 405, allow, code: method === 'HEAD' ? undefined : 'method_not_allowed' }]);
        asked += 1;
      }
    }
    expect(asked).toBeGreaterThan(60);
    // A path the API does not have stays 404, whatever the method.
    for (const method of ['GET', 'TRACE']) expect(await ask(method, '/nothing-here', tenant.token)).toMatchObject({ status: 404, allow: undefined, code: 'not_found' });
  });

  it('asks for a token before saying whether a route exists', async () => {
    const response = await new ApiClient(`${stack.gatewayUrl}/api/v1`, undefined).get('/nothing-here');
    expect(response.status).toBe(401);
  });

  it('refuses a token as soon as it is revoked, though it was cached', async () => {
    const tenant = await createTenant(stack, 'revoke-live');
    expect((await tenant.api.get('/environments')).status).toBe(200);
    await revokeToken(stack, tenant.tokenId);
    // The revocation travels by Redis pub/sub; allow it a moment, far below the cache TTL.
    const deadline = Date.now() + 2000;
    let status = 200;
    while (Date.now() < deadline && status !== 401) {
      status = (await tenant.api.get('/environments')).status;
    }
    expect(status).toBe(401);
  });

  it('limits each token\'s rate with 429 and Retry-After, without touching other tokens', async () => {
    const noisy = await createTenant(stack, 'noisy');
    const quiet = await createTenant(stack, 'quiet');
    const responses = await Promise.all(Array.from({ length: 400 }, () => noisy.api.get('/environments')));
    const limited = responses.filter((response) => response.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(responses.filter((response) => response.status === 200).length).toBeGreaterThanOrEqual(200);
    expect(ErrorBody.parse(limited[0]!.body).error.code).toBe('rate_limited');
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await quiet.api.get('/environments')).status).toBe(200);
  });

  it.each(['placement-service', 'deployment-service', 'secrets-service'] as const)(
    '%s refuses requests that skip the gateway',
    async (service) => {
      const tenant = await createTenant(stack, 'direct');
      const direct = await fetch(`${stack.urls[service]}/api/v1/environments`, {
        headers: { authorization: `Bearer ${tenant.token}`, 'x-envengine-tenant-id': tenant.tenantId },
      });
      expect(direct.status).toBe(401);
      expect(ErrorBody.parse(await direct.json()).error.code).toBe('unauthorized');
      const forged = await fetch(`${stack.urls[service]}/api/v1/environments`, {
        headers: { 'x-envengine-internal-credential': 'x'.repeat(64), 'x-envengine-tenant-id': tenant.tenantId },
      });
      expect(forged.status).toBe(401);
    },
  );

  it.each(['workflow-worker', 'attempt-worker'] as const)('%s reports ready', async (service) => {
    const ready = await fetch(`${stack.urls[service]}/readyz`);
    expect(ready.status).toBe(200);
  });
});
