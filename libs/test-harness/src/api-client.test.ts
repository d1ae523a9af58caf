import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PublicApi } from '@envengine/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, ApiRefusal } from './api-client.ts';

const environment = {
  id: 'env_01jc0000000000000000000000', name: 'prod', kind: 'persistent', git_ref: null, storage_prefix: 'file://prod', strict: false, schedules_paused: false,
  schedules_paused_reason: null, executor: 'local', egress: 'none', active_deployment_id: null, status: 'active', ttl_hours: null, idle_ttl_hours: null, expires_at: null,
  purge_data_on_expiry: true, max_concurrent_runs: null, parent: null, inserted_at: '2025-01-01T00:00:00.000Z',
};

const seen: Array<{ method: string; url: string; body: string; authorization: string | undefined }> = [];
let answer: (request: IncomingMessage, response: ServerResponse) => void = () => undefined;
const server = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => (body += chunk.toString()));
  request.on('end', () => {
    seen.push({ method: request.method!, url: request.url!, body, authorization: request.headers.authorization });
    answer(request, response);
  });
});
const json = (response: ServerResponse, status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
let api: ApiClient;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  api = new ApiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, 'eek_test');
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('ApiClient.call', () => {
  it('sends a route built from its params, with its body and the token, and answers its typed data', async () => {
    answer = (_request, response) => json(response, 201, { data: environment });
    const created = await api.call(PublicApi.createEnvironment, { body: { name: 'prod', storage_prefix: 'file://prod', executor: 'local' } });
    expect(created).toEqual({ status: 201, data: environment });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', url: '/api/v1/environments', authorization: 'Bearer eek_test' });
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ name: 'prod', storage_prefix: 'file://prod', executor: 'local' });

    answer = (_request, response) => json(response, 200, { data: [] });
    await api.call(PublicApi.listRuns, { params: { name: 'pr 7/x' }, query: { limit: 5, status: 'queued' } });
    expect(seen.at(-1)!.url).toBe('/api/v1/environments/pr%207%2Fx/runs?limit=5&status=queued');
  });

  it('throws an ApiRefusal for a refusal, and refuses an answer off the contract', async () => {
    answer = (_request, response) => json(response, 404, { error: { code: 'not_found', message: 'Environment "nope" was not found.', details: [] } });
    const refusal = await api.call(PublicApi.getEnvironment, { params: { name: 'nope' } }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ApiRefusal);
    expect([(refusal as ApiRefusal).status, (refusal as ApiRefusal).error?.code]).toEqual([404, 'not_found']);

    answer = (_request, response) => json(response, 200, { data: { name: 'prod' } });
    await expect(api.call(PublicApi.getEnvironment, { params: { name: 'prod' } })).rejects.toThrow(/OpenAPI document|contract refuses/);
  });
});
