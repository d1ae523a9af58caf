import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { generateToken } from '@envengine/api-tokens';
import { ErrorBody, type ErrorCode } from '@envengine/contracts';
import { createTenant, revokeToken, type ApiClient, type RequestOptions, type TestTenant } from '@envengine/test-harness';

const stack = inject('stack');

interface BadRequest {
  title: string;
  method: string;
  path: string;
  options?: RequestOptions;
  /** Send without the tenant's token (or with the token given here). */
  token?: string | null;
  status: number;
  code: ErrorCode;
  /** A field the error's details must name. */
  detailPath?: string;
}

const valid = { name: 'fresh', storage_prefix: 's3://lake/fresh', executor: 'local' };

describe('bad input gets the documented status and code, and changes nothing', () => {
  let tenant: TestTenant;
  let revokedToken: string;
  let snapshot: unknown;

  const snapshotOf = async (api: ApiClient) => {
    const list = await api.get('/environments');
    expect(list.status).toBe(200);
    return list.body;
  };

  beforeAll(async () => {
    tenant = await createTenant(stack, 'bad-input');
    await tenant.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/prod', executor: 'local' });
    await tenant.api.post('/environments/prod/schedules/pause', { reason: 'kept' });
    const revoked = await createTenant(stack, 'revoked');
    revokedToken = revoked.token;
    await revokeToken(stack, revoked.tokenId);
    snapshot = await snapshotOf(tenant.api);
  });

  const create = (body: unknown): RequestOptions => ({ json: body });
  const cases: BadRequest[] = [
    { title: 'no token', method: 'POST', path: '/environments', options: create(valid), token: null, status: 401, code: 'unauthorized' },
    { title: 'a malformed token', method: 'POST', path: '/environments', options: { ...create(valid), headers: { authorization: 'Bearer nope' } }, status: 401, code: 'unauthorized' },
    { title: 'a wrong token', method: 'POST', path: '/environments', options: create(valid), token: generateToken(), status: 401, code: 'unauthorized' },
    { title: 'a Basic credential', method: 'GET', path: '/environments', options: { headers: { authorization: 'Basic dXNlcjpwYXNz' } }, status: 401, code: 'unauthorized' },
    { title: 'a body that is not JSON', method: 'POST', path: '/environments', options: { raw: '{"name": "fresh",', headers: { 'content-type': 'application/json' } }, status: 400, code: 'invalid_json' },
    { title: 'JSON sent as text/plain', method: 'POST', path: '/environments', options: { raw: JSON.stringify(valid), headers: { 'content-type': 'text/plain' } }, status: 400, code: 'invalid_json' },
    { title: 'no body at all', method: 'POST', path: '/environments', status: 400, code: 'invalid_json' },
    { title: 'a JSON array', method: 'POST', path: '/environments', options: create([valid]), status: 422, code: 'invalid_request' },
    { title: 'missing name', method: 'POST', path: '/environments', options: create({ storage_prefix: 's3://lake/x', executor: 'local' }), status: 422, code: 'invalid_request', detailPath: 'name' },
    { title: 'missing storage_prefix', method: 'POST', path: '/environments', options: create({ name: 'fresh', executor: 'local' }), status: 422, code: 'invalid_request', detailPath: 'storage_prefix' },
    { title: 'missing executor', method: 'POST', path: '/environments', options: create({ name: 'fresh', storage_prefix: 's3://lake/x' }), status: 422, code: 'invalid_request', detailPath: 'executor' },
    { title: 'an empty storage_prefix', method: 'POST', path: '/environments', options: create({ ...valid, storage_prefix: '' }), status: 422, code: 'invalid_request', detailPath: 'storage_prefix' },
    { title: 'an s3:// storage_prefix with no bucket', method: 'POST', path: '/environments', options: create({ ...valid, storage_prefix: 's3://' }), status: 422, code: 'invalid_request', detailPath: 'storage_prefix' },
    { title: 'an s3:// storage_prefix of a bucket alone', method: 'POST', path: '/environments', options: create({ ...valid, storage_prefix: 's3://lake' }), status: 422, code: 'invalid_request', detailPath: 'storage_prefix' },
    { title: 'an s3:// storage_prefix of a bucket and a slash', method: 'POST', path: '/environments', options: create({ ...valid, storage_prefix: 's3://lake/' }), status: 422, code: 'invalid_request', detailPath: 'storage_prefix' },
    { title: 'an s3:// storage_prefix with a wildcard', method: 'POST', path: '/environments', options: create({ ...valid, storage_prefix: 's3://lake/pr*' }), status: 422, code: 'invalid_request', detailPath: 'storage_prefix' },
    { title: 'an s3:// storage_prefix with a ".." segment', method: 'POST', path: '/environments', options: create({ ...valid, storage_prefix: 's3://lake/../other' }), status: 422, code: 'invalid_request', detailPath: 'storage_prefix' },
    { title: 'executor outside its enum', method: 'POST', path: '/environments', options: create({ ...valid, executor: 'cloud' }), status: 422, code: 'invalid_request', detailPath: 'executor' },
    { title: 'kind outside its enum', method: 'POST', path: '/environments', options: create({ ...valid, kind: 'temporary' }), status: 422, code: 'invalid_request', detailPath: 'kind' },
    { title: 'strict not a boolean', method: 'POST', path: '/environments', options: create({ ...valid, strict: 'yes' }), status: 422, code: 'invalid_request', detailPath: 'strict' },
    { title: 'name not a string', method: 'POST', path: '/environments', options: create({ ...valid, name: 42 }), status: 422, code: 'invalid_request', detailPath: 'name' },
    { title: 'unknown field id', method: 'POST', path: '/environments', options: create({ ...valid, id: 'env_mine' }), status: 422, code: 'invalid_request' },
    { title: 'unknown field schedules_paused', method: 'POST', path: '/environments', options: create({ ...valid, schedules_paused: true }), status: 422, code: 'invalid_request' },
    { title: 'unknown field active_deployment_id', method: 'POST', path: '/environments', options: create({ ...valid, active_deployment_id: 'dep_x' }), status: 422, code: 'invalid_request' },
    { title: 'unknown field git_ref', method: 'POST', path: '/environments', options: create({ ...valid, git_ref: 'abc' }), status: 422, code: 'invalid_request' },
    { title: 'a name with a slash', method: 'POST', path: '/environments', options: create({ ...valid, name: 'a/b' }), status: 422, code: 'invalid_request', detailPath: 'name' },
    { title: 'a name with a space', method: 'POST', path: '/environments', options: create({ ...valid, name: 'a b' }), status: 422, code: 'invalid_request', detailPath: 'name' },
    { title: 'the name ..', method: 'POST', path: '/environments', options: create({ ...valid, name: '..' }), status: 422, code: 'invalid_request', detailPath: 'name' },
    { title: 'a name of 300 characters', method: 'POST', path: '/environments', options: create({ ...valid, name: 'a'.repeat(300) }), status: 422, code: 'invalid_request', detailPath: 'name' },
    { title: 'an empty name', method: 'POST', path: '/environments', options: create({ ...valid, name: '' }), status: 422, code: 'invalid_request', detailPath: 'name' },
    { title: 'a duplicate name', method: 'POST', path: '/environments', options: create({ ...valid, name: 'prod' }), status: 409, code: 'environment_exists' },
    { title: 'a body over the limit', method: 'POST', path: '/environments', options: create({ ...valid, storage_prefix: 'x'.repeat(2 * 1024 * 1024) }), status: 413, code: 'payload_too_large' },
    { title: 'a GET of a name with a space', method: 'GET', path: '/environments/a%20b', status: 422, code: 'invalid_request', detailPath: 'path.name' },
    { title: 'a GET of a name with an encoded slash', method: 'GET', path: '/environments/a%2Fb', status: 422, code: 'invalid_request', detailPath: 'path.name' },
    { title: 'a GET of 300 characters', method: 'GET', path: `/environments/${'a'.repeat(300)}`, status: 422, code: 'invalid_request' },
    { title: 'placement outside its enum', method: 'POST', path: '/environments/prod/placement', options: create({ executor: 'cloud' }), status: 422, code: 'invalid_request', detailPath: 'executor' },
    { title: 'placement with an unknown field', method: 'POST', path: '/environments/prod/placement', options: create({ executor: 'remote', strict: true }), status: 422, code: 'invalid_request' },
    { title: 'placement without a body', method: 'POST', path: '/environments/prod/placement', status: 400, code: 'invalid_json' },
    { title: 'all-environment placement outside its enum', method: 'POST', path: '/placement', options: create({ executor: 'gpu' }), status: 422, code: 'invalid_request', detailPath: 'executor' },
    { title: 'pause with an unknown field', method: 'POST', path: '/environments/prod/schedules/pause', options: create({ until: 'tomorrow' }), status: 422, code: 'invalid_request' },
    { title: 'pause with a reason that is not a string', method: 'POST', path: '/environments/prod/schedules/pause', options: create({ reason: 7 }), status: 422, code: 'invalid_request', detailPath: 'reason' },
    { title: 'resume with a body that is not JSON', method: 'POST', path: '/environments/prod/schedules/resume', options: { raw: 'resume please', headers: { 'content-type': 'application/json' } }, status: 400, code: 'invalid_json' },
    { title: 'an unknown route', method: 'GET', path: '/nothing-here', status: 404, code: 'not_found' },
    { title: 'a GET of a name with a malformed %-escape', method: 'GET', path: '/environments/%E0%A4%A', status: 422, code: 'invalid_request' },
    { title: 'placement of a name that is only %', method: 'POST', path: '/environments/%/placement', options: create({ executor: 'remote' }), status: 422, code: 'invalid_request' },
    { title: 'pause with a JSON null body', method: 'POST', path: '/environments/prod/schedules/pause', options: { raw: 'null', headers: { 'content-type': 'application/json' } }, status: 422, code: 'invalid_request' },
    // A path the API has, with a method it does not declare there: 405, and Allow says which it does.
    { title: 'an OPTIONS request', method: 'OPTIONS', path: '/environments', status: 405, code: 'method_not_allowed' },
    { title: 'a PATCH the API does not have', method: 'PATCH', path: '/environments/prod/placement', options: create({ executor: 'remote' }), status: 405, code: 'method_not_allowed' },
    // Refused by the gateway before any service parses it (5,000 levels of a binding's config answered 500: MongoDB's own limit is 100).
    { title: "a binding's config nested 5,000 levels deep", method: 'PUT', path: '/environments/prod/bindings/deep', options: { raw: `{"config":{"a":${'['.repeat(5000)}${']'.repeat(5000)}}}`, headers: { 'content-type': 'application/json' } }, status: 400, code: 'invalid_json' },
    { title: 'a body nested 33 levels deep', method: 'POST', path: '/environments', options: { raw: `{"name":"fresh","storage_prefix":"s3://lake/fresh","executor":"local","x":${'['.repeat(32)}${']'.repeat(32)}}`, headers: { 'content-type': 'application/json' } }, status: 400, code: 'invalid_json' },
    { title: 'a PATCH of the executor (placement has its own route)', method: 'PATCH', path: '/environments/prod', options: create({ executor: 'remote' }), status: 422, code: 'invalid_request', detailPath: 'executor' },
  ];

  it.each(cases)('$title → $status $code', async (bad) => {
    const api = bad.token === undefined ? tenant.api : tenant.api.withToken(bad.token ?? undefined);
    const response = await api.request(bad.method, bad.path, bad.options);
    expect(response.status).toBe(bad.status);
    const body = ErrorBody.parse(response.body);
    expect(body.error.code).toBe(bad.code);
    expect(body.error.message.length).toBeGreaterThan(0);
    if (bad.status === 401) expect(response.headers.get('www-authenticate')).toBe('Bearer');
    if (bad.detailPath) expect(body.error.details.map((detail) => detail.path)).toContain(bad.detailPath);
    expect(await snapshotOf(tenant.api)).toEqual(snapshot);
  });

  it('refuses a revoked token', async () => {
    const response = await tenant.api.withToken(revokedToken).post('/environments', valid);
    expect(response.status).toBe(401);
    expect(ErrorBody.parse(response.body).error.code).toBe('unauthorized');
    expect(await snapshotOf(tenant.api)).toEqual(snapshot);
  });

  it('never echoes a token in an error', async () => {
    const wrong = `eek_${randomBytes(32).toString('base64url')}`;
    const response = await tenant.api.withToken(wrong).get('/environments');
    expect(response.text).not.toContain(wrong);
  });
});
