import { afterEach, describe, expect, it } from 'vitest';
import { startHealthServer, type HealthServer } from './health-server.ts';

let server: HealthServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('startHealthServer', () => {
  it('answers /healthz, and /readyz with 503 naming the check that is down', async () => {
    let redisUp = false;
    server = await startHealthServer({ service: 'probe', host: '127.0.0.1', port: 0, readiness: { redis: async () => redisUp, api: async () => true } });
    const base = `http://127.0.0.1:${server.port}`;
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ data: { status: 'ok', service: 'probe', checks: {} } });
    const down = await fetch(`${base}/readyz`);
    expect([down.status, await down.json()]).toEqual([503, { data: { status: 'unavailable', service: 'probe', checks: { redis: 'down', api: 'ok' } } }]);
    redisUp = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`, { method: 'HEAD' })).status).toBe(200);
  });

  it('answers 404 on any other path and 405 with Allow on another method', async () => {
    server = await startHealthServer({ service: 'probe', host: '127.0.0.1', port: 0, readiness: {} });
    const base = `http://127.0.0.1:${server.port}`;
    const missing = await fetch(`${base}/metrics`, { method: 'POST' });
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([404, 'not_found']);
    const wrong = await fetch(`${base}/healthz`, { method: 'POST' });
    expect([wrong.status, wrong.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
  });
});
