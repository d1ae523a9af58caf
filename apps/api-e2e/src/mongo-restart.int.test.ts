import { get as httpGet } from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { generateToken } from '@envengine/api-tokens';
import { startMongo, type BackingServer } from '@envengine/backing-servers';
import { ErrorBody } from '@envengine/contracts';
import { createTenant, manifestOf, startTestStack, type TestStack, type TestTenant, until } from '@envengine/test-harness';

const shared = inject('stack');


describe('a stack of its own: dependency restarts and graceful stops', () => {
  // A stack of its own, so that stopping its database cannot disturb other tests.
  let stack: TestStack;
  let tenant: TestTenant;
  let restarted: BackingServer | undefined;

  beforeAll(async () => {
    // A small refused-token budget, so the limit test needs no flood that must outrun a refill.
    // One mongod and one of each service whatever the profile: the test stops and restarts
    // that mongod (a member's death in a set of three: mongo-failover).
    stack = await startTestStack({
      mongoMembers: 1,
      replicas: 1,
      redisUrl: shared.redisUrl,
      temporalAddress: shared.temporalAddress,
      env: { FAILED_AUTH_PER_SECOND: '1', FAILED_AUTH_BURST: '5' },
    });
    tenant = await createTenant(stack.info, 'restart');
    expect((await tenant.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/p', executor: 'local' })).status).toBe(201);
  });

  afterAll(async () => {
    await stack?.stop();
    await restarted?.stop();
  });

  it('answers 503 unavailable while it is down and recovers without restarting services', async () => {
    const port = Number(new URL(stack.servers.mongo.url).port);
    await stack.servers.mongo.stop();

    const down = await until(() => tenant.api.get('/environments/prod'), (r) => r.status === 503, 15_000);
    expect(down.status).toBe(503);
    expect(ErrorBody.parse(down.body).error.code).toBe('unavailable');
    const createWhileDown = await tenant.api.post('/environments', { name: 'staging', storage_prefix: 's3://lake/s', executor: 'local' });
    expect(createWhileDown.status).toBe(503);
    expect((await fetch(`${stack.info.urls['placement-service']}/readyz`)).status).toBe(503);

    restarted = await startMongo({ dataDir: stack.info.dataDir, port, auth: stack.servers.mongoAuth, report: () => undefined });

    const back = await until(() => tenant.api.get('/environments/prod'), (r) => r.status === 200, 30_000);
    expect(back.status).toBe(200);
    expect(back.body.data.name).toBe('prod');
    // Nothing was written while the database was down, and writes work again.
    expect((await tenant.api.get('/environments/staging')).status).toBe(404);
    expect((await tenant.api.post('/environments', { name: 'staging', storage_prefix: 's3://lake/s', executor: 'local' })).status).toBe(201);
    for (const process_ of Object.values(stack.services.processes)) expect(process_.running).toBe(true);
  });

  it('lets requests in flight finish when the gateway gets SIGTERM', async () => {
    const gateway = stack.services.processes.gateway;
    // Each request on a connection of its own, the stop only once every one has been written
    // to its socket: in flight by evidence, not by a guess of how long that takes.
    const inFlight = Array.from({ length: 40 }, () => {
      let sent!: () => void;
      const written = new Promise<void>((resolve) => (sent = resolve));
      const answered = new Promise<number | Error>((resolve) => {
        const request = httpGet(`${stack.info.gatewayUrl}/api/v1/environments/prod`, { agent: false, headers: { authorization: `Bearer ${tenant.token}` } }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        });
        request.on('finish', sent);
        request.on('error', (error) => {
          sent();
          resolve(error);
        });
      });
      return { written, answered };
    });
    await Promise.all(inFlight.map((request) => request.written));
    await gateway.stop();
    const results = await Promise.all(inFlight.map((request) => request.answered));
    // Every request the gateway had taken is answered 200. One still in the kernel's backlog
    // when the listener closed is reset unread (an error at connect, never a 5xx or a cut reply).
    const answered = results.filter((result): result is number => typeof result === 'number');
    expect(answered).toEqual(answered.map(() => 200));
    expect(answered.length).toBeGreaterThan(0);
    for (const error of results.filter((result): result is Error => result instanceof Error)) expect((error as NodeJS.ErrnoException).code).toMatch(/^(ECONNRESET|ECONNREFUSED)$/);
    expect(await gateway.waitForExit()).toBe(0);
    await stack.services.restart('gateway');
    expect((await tenant.api.get('/environments/prod')).status).toBe(200);
  });

  it('stops the workflow-worker on SIGTERM with exit 0 (its own stop, not the SDK\'s), and ingests again once it is back', async () => {
    const worker = stack.services.processes['workflow-worker'];
    await worker.stop();
    expect(worker.exitStatus).toEqual({ code: 0, signal: null });
    await stack.services.restart('workflow-worker');
    // An ingest runs its workflow on the worker: an unknown bundle fails it, with its reason.
    const ingest = await tenant.api.post('/environments/prod/deployments', { manifest: manifestOf([{ key: 'orders' }]), bundle_ref: `sha256:${'0'.repeat(64)}` });
    expect(ingest.status, ingest.text).toBe(422);
    expect(ingest.body.data.validation.errors.map((error: { code: string }) => error.code)).toContain('bundle_not_found');
  });

  it('limits refused tokens per client address, before any lookup, and leaves valid tokens alone', async () => {
    const started = Date.now();
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<typeof tenant.api.get>> | undefined;
    for (let i = 0; i < 30; i += 1) {
      const response = await tenant.api.withToken(generateToken()).get('/environments');
      statuses.push(response.status);
      if (response.status === 429) limited ??= response;
    }
    const elapsedSeconds = (Date.now() - started) / 1000;
    // The burst of 5 is answered (401), then at most one more per second of refill.
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(5 + Math.ceil(elapsedSeconds));
    expect(statuses.every((status) => status === 401 || status === 429)).toBe(true);
    expect(limited).toBeDefined();
    expect(ErrorBody.parse(limited!.body).error.code).toBe('rate_limited');
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await tenant.api.get('/environments/prod')).status).toBe(200);
  });
});
