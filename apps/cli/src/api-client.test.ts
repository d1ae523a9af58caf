import { PublicApi } from '@envengine/contracts';
import { describe, expect, it } from 'vitest';
import { ApiClient, exitCodeForApiError } from './api-client.ts';
import { CliError } from './exit-codes.ts';

const TOKEN = 'eek_secret-token-value';
const environment = { id: 'env_1', name: 'prod', kind: 'persistent', git_ref: null, storage_prefix: 'p', strict: false, schedules_paused: false, schedules_paused_reason: null, executor: 'local', egress: 'none', active_deployment_id: null, status: 'active', ttl_hours: null, idle_ttl_hours: null, expires_at: null, purge_data_on_expiry: true, max_concurrent_runs: null, parent: null, inserted_at: '2025-01-01T00:00:00.000Z' };

const deployment = { id: 'dep_1', environment_id: 'env_1', status: 'failed', active: false, git: { branch: 'main', sha: 'abc' }, bundle_ref: `sha256:${'0'.repeat(64)}`, sdk_version: null, validation: { errors: [], warnings: [] }, allow_contract_changes: [], created_by: 'envctl', promoted_from: null, inserted_at: '2025-01-01T00:00:00.000Z' };

interface Seen { url: string; method: string; headers: Record<string, string>; body: unknown }

function fakeFetch(answers: Array<Response | Error>): { fetch: typeof fetch; seen: Seen[] } {
  const seen: Seen[] = [];
  const fetchImpl = (async (url: string, init: RequestInit) => {
    seen.push({ url, method: String(init.method), headers: init.headers as Record<string, string>, body: init.body });
    const answer = answers.shift();
    if (!answer) throw new Error('no more answers');
    if (answer instanceof Error) throw answer;
    return answer;
  }) as unknown as typeof fetch;
  return { fetch: fetchImpl, seen };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const apiError = (status: number, code: string, message: string) => json(status, { error: { code, message, details: [] } });
const client = (fetchImpl: typeof fetch) => new ApiClient({ baseUrl: 'http://engine:8080', token: TOKEN, userAgent: 'envctl/test', fetch: fetchImpl, sleep: async () => {} });

async function failure(promise: Promise<unknown>): Promise<CliError> {
  const error = await promise.then(() => undefined, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(CliError);
  expect((error as CliError).message).not.toContain(TOKEN);
  return error as CliError;
}

describe('ApiClient', () => {
  it('sends the token only in the Authorization header and parses the data with the contract', async () => {
    const { fetch, seen } = fakeFetch([json(200, { data: environment })]);
    const answer = await client(fetch).request(PublicApi.getEnvironment, { params: { name: 'prod' } });
    expect(answer).toEqual({ status: 200, data: environment });
    expect(seen[0]!.url).toBe('http://engine:8080/api/v1/environments/prod');
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('maps API errors to exit codes: 401 → 3, 404 → 4, 422 → 2, 409 → 1, 503 → 5', async () => {
    for (const [status, code, exit] of [[401, 'unauthorized', 3], [404, 'not_found', 4], [422, 'invalid_request', 2], [409, 'environment_exists', 1], [400, 'invalid_json', 2], [413, 'payload_too_large', 2]] as const) {
      const { fetch } = fakeFetch([apiError(status, code, 'nope')]);
      const error = await failure(client(fetch).request(PublicApi.getEnvironment, { params: { name: 'prod' } }));
      expect([error.exitCode, error.code]).toEqual([exit, code]);
    }
    const { fetch, seen } = fakeFetch([1, 2, 3, 4].map(() => apiError(503, 'unavailable', 'MongoDB is down')));
    const error = await failure(client(fetch).request(PublicApi.listEnvironments, {}));
    expect([error.exitCode, error.code, seen.length]).toEqual([5, 'unavailable', 4]);
    expect(exitCodeForApiError(undefined, 502)).toBe(5);
  });

  it('names the URL when the server cannot be reached, after retrying', async () => {
    const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:8080'), { code: 'ECONNREFUSED' }) });
    const { fetch, seen } = fakeFetch([refused, refused, refused, refused]);
    const error = await failure(client(fetch).request(PublicApi.listEnvironments, {}));
    expect(error.exitCode).toBe(5);
    expect(error.message).toContain('http://engine:8080');
    expect(error.message).toContain('ECONNREFUSED');
    expect(seen).toHaveLength(4);
  });

  it('repeats a POST only with one Idempotency-Key across its tries, and never repeats a POST without one', async () => {
    const refused = new TypeError('fetch failed');
    const keyed = fakeFetch([refused, json(201, { data: environment })]);
    await client(keyed.fetch).request(PublicApi.createEnvironment, { body: { name: 'prod', storage_prefix: 'file://p', executor: 'local' } }, { idempotent: true });
    expect(keyed.seen).toHaveLength(2);
    expect(keyed.seen[0]!.headers['idempotency-key']).toMatch(/^envctl-/);
    expect(keyed.seen[1]!.headers['idempotency-key']).toBe(keyed.seen[0]!.headers['idempotency-key']);
    const unkeyed = fakeFetch([refused, json(201, { data: environment })]);
    expect((await failure(client(unkeyed.fetch).request(PublicApi.createPoolCredential, { body: {} }))).exitCode).toBe(5);
    expect(unkeyed.seen).toHaveLength(1);
  });

  it('waits out a 429 as Retry-After says, and reads a failed ingest 422 as data', async () => {
    const limited = fakeFetch([json(429, { error: { code: 'rate_limited', message: 'slow down', details: [] } }, { 'retry-after': '1' }), json(200, { data: environment })]);
    expect((await client(limited.fetch).request(PublicApi.getEnvironment, { params: { name: 'prod' } })).status).toBe(200);
    const failed = fakeFetch([json(422, { data: deployment })]);
    const answer = await client(failed.fetch).request(PublicApi.createDeployment, { params: { name: 'prod' }, body: {} }, { idempotent: true });
    expect(answer).toEqual({ status: 422, data: deployment });
    expect(failed.seen[0]!.url).toBe('http://engine:8080/api/v1/environments/prod/deployments');
    // A 422 refusal (the error shape) of the same route is still a refusal.
    const refusedIngest = fakeFetch([apiError(422, 'invalid_request', 'no manifest')]);
    expect((await failure(client(refusedIngest.fetch).request(PublicApi.createDeployment, { params: { name: 'prod' }, body: {} }))).code).toBe('invalid_request');
  });

  it('refuses an answer that does not match the contract', async () => {
    const { fetch } = fakeFetch([json(200, { data: { name: 'prod' } })]);
    const error = await failure(client(fetch).request(PublicApi.getEnvironment, { params: { name: 'prod' } }));
    expect([error.exitCode, error.code]).toEqual([5, 'unexpected_response']);
  });
});
