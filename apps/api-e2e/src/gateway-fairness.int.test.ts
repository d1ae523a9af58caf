import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ErrorBody } from '@envengine/contracts';
import { newId } from '@envengine/resource-ids';
import { anotherTokenOf, createTenant, makeBundle, recordMaterialization, startTestStack, until, type TestStack, type TestTenant } from '@envengine/test-harness';

const shared = inject('stack');

/**
 * The gateway's upstream capacity lowered, so that a probe a few times these numbers
 * exhausts it: 8 connections per service for the API's reads and writes, 4 for uploads and
 * downloads, a tenant's share 4 and 2 of them (refused at once past it, rather than after the
 * default wait behind the tenant's own), and bodies cut below 2000 bytes/s over 1.5 s.
 */
const SETTINGS = {
  UPSTREAM_CONNECTIONS: '8',
  UPSTREAM_STREAM_CONNECTIONS: '4',
  UPSTREAM_TENANT_IN_FLIGHT: '4',
  UPSTREAM_TENANT_STREAMS: '2',
  UPSTREAM_TENANT_WAIT_MS: '0',
  BODY_MIN_BYTES_PER_SECOND: '2000',
  BODY_RATE_WINDOW_MS: '1500',
};
/** Bigger than every buffer between the placement-service and a client that never reads (the kernel's included). */
const BIG_FILE_BYTES = 32 * 1024 * 1024;
/** A victim request not answered by then counts as failed (the old gateway held them until UPSTREAM_TIMEOUT_MS). */
const VICTIM_TIMEOUT_MS = 3000;
/** Requests in each timed series: enough that the p99 is not merely the slowest one. */
const VICTIM_SAMPLES = 100;
/** The bound's constant beside twice the quiet p99: this 2-core machine runs other suites at once. */
const SLACK_MS = 400;

/** The q-th quantile (nearest rank) of durations in ms. */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

interface Latencies {
  p50: number;
  p99: number;
  failed: number;
}

/**
 * `count` of the victim's requests one after another, each timed; one not answered 200 within
 * VICTIM_TIMEOUT_MS counts as failed (Infinity). Three failures end the series early.
 */
async function victimSeries(victim: TestTenant, paths: string[], count: number): Promise<Latencies> {
  const durations: number[] = [];
  let failed = 0;
  for (let i = 0; i < count && failed < 3; i++) {
    const path = paths[i % paths.length]!;
    const started = performance.now();
    const status = await fetch(`${victim.api.baseUrl}${path}`, { headers: { authorization: `Bearer ${victim.token}` }, signal: AbortSignal.timeout(VICTIM_TIMEOUT_MS) })
      .then(async (response) => (await response.arrayBuffer(), response.status))
      .catch(() => 0);
    if (status === 200) durations.push(performance.now() - started);
    else {
      durations.push(Infinity);
      failed += 1;
    }
  }
  return { p50: quantile(durations, 0.5), p99: quantile(durations, 0.99), failed };
}

function report(name: string, quiet: Latencies, attacked: Latencies, after?: Latencies): void {
  const ms = (value: number) => (Number.isFinite(value) ? `${value.toFixed(0)} ms` : 'timeout');
  const line = (label: string, l: Latencies) => `${label} p50 ${ms(l.p50)} p99 ${ms(l.p99)} failed ${l.failed}`;
  console.log(`[gateway-fairness] ${name}: ${line('quiet', quiet)}; ${line('attack', attacked)}${after ? `; ${line('after', after)}` : ''}`);
}

function expectWithinBound(quiet: Latencies, measured: Latencies, what: string): void {
  expect(measured.failed, `${what}: victim requests not answered 200 within ${VICTIM_TIMEOUT_MS} ms`).toBe(0);
  expect(measured.p99, `${what}: victim p99 against twice the quiet p99 (${quiet.p99.toFixed(0)} ms) plus ${SLACK_MS} ms`).toBeLessThanOrEqual(2 * quiet.p99 + SLACK_MS);
}

/**
 * A raw connection to the gateway that sends `head` (and what `onConnect` writes); resolves
 * `answer` with the status of the first response, or `closed`, and `text` with the first chunk received.
 */
function rawExchange(gatewayUrl: string, head: string, onConnect?: (socket: Socket) => void): { socket: Socket; answer: Promise<number | 'closed'>; text: Promise<string> } {
  const { hostname, port } = new URL(gatewayUrl);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  const text = new Promise<string>((resolve) => {
    socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1')));
    socket.once('close', () => resolve(''));
  });
  const answer = text.then((first) => (first === '' ? ('closed' as const) : Number(/^HTTP\/1\.1 (\d{3})/.exec(first)?.[1] ?? 0)));
  socket.once('connect', () => {
    socket.write(head);
    onConnect?.(socket);
  });
  return { socket, answer, text };
}

/** A download whose client reads the status line and then nothing more. */
function stalledDownload(gatewayUrl: string, token: string, path: string) {
  const exchange = rawExchange(gatewayUrl, `GET ${path} HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  void exchange.answer.then(() => exchange.socket.pause());
  return exchange;
}

/** The upload of a real bundle (so that the service reads on), sent 4 bytes a second. */
function drippingUpload(gatewayUrl: string, token: string, bundle: Buffer) {
  let drip: NodeJS.Timeout | undefined;
  let sent = 0;
  const exchange = rawExchange(
    gatewayUrl,
    `POST /api/v1/bundles HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/gzip\r\nContent-Length: ${bundle.length}\r\n\r\n`,
    (socket) => {
      drip = setInterval(() => socket.write(bundle.subarray(sent, (sent += 1))), 250);
    },
  );
  void exchange.answer.finally(() => clearInterval(drip));
  return { ...exchange, stop: () => clearInterval(drip) };
}

/** The status of a one-byte range of a download (0 when not answered within 3 s). */
function rangeProbe(gatewayUrl: string, token: string, path: string): Promise<number> {
  return fetch(`${gatewayUrl}${path}`, { headers: { authorization: `Bearer ${token}`, range: 'bytes=0-0' }, signal: AbortSignal.timeout(3000) })
    .then(async (response) => (await response.arrayBuffer(), response.status))
    .catch(() => 0);
}

/** Waits for `answer`, or resolves `pending` at `timeoutMs` (a bound on the wait, never a pause). */
function within<T>(answer: Promise<T>, timeoutMs: number): Promise<T | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([answer, new Promise<'pending'>((resolve) => (timer = setTimeout(() => resolve('pending'), timeoutMs)))]).finally(() => clearTimeout(timer));
}

describe('the gateway shares its upstream capacity fairly and gives it back (a stack of its own, capacity lowered)', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ replicas: 1, mongoUrl: shared.mongoUrl, redisUrl: shared.redisUrl, temporalAddress: shared.temporalAddress, env: SETTINGS });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  /** Environment `prod` on a `file://` lake of the tenant's, with one materialization of `bytes` recorded; its download path. */
  async function materializationOf(tenant: TestTenant, bytes: number): Promise<string> {
    const lake = join(stack.info.dataDir, 'lake', tenant.tenantId);
    await mkdir(lake, { recursive: true });
    const created = await tenant.api.post('/environments', { name: 'prod', storage_prefix: pathToFileURL(lake).href, executor: 'local' });
    expect(created.status, created.text).toBe(201);
    const id = newId('mat');
    const file = join(lake, `${id}.parquet`);
    await writeFile(file, Buffer.alloc(bytes, 7));
    await recordMaterialization(stack.info, tenant.tenantId, {
      id,
      environment_id: (created.body as { data: { id: string } }).data.id,
      asset_key: 'big',
      columns: [{ name: 'id', type: 'integer' }],
      row_count: 1,
      location: pathToFileURL(file).href,
      bytes,
    });
    return `/api/v1/environments/prod/assets/big/materializations/${id}/data`;
  }

  it('unread downloads whose sockets are then destroyed hold no upstream connection: the victim is served during and after, and the attacker downloads again at once', { timeout: 180_000 }, async () => {
    const attacker = await createTenant(stack.info, 'unread-downloads');
    const victim = await createTenant(stack.info, 'victim');
    const download = await materializationOf(attacker, BIG_FILE_BYTES);
    const victimDownload = (await materializationOf(victim, 4096)).replace('/api/v1', '');
    const reads = ['/environments', '/environments/prod', victimDownload];
    const quiet = await victimSeries(victim, reads, VICTIM_SAMPLES);

    // Twenty downloads of 32 MB (more than twice the stream pool) whose client never reads past the status line.
    const stalled = Array.from({ length: 20 }, () => stalledDownload(stack.info.gatewayUrl, attacker.token, download));
    const statuses = await Promise.all(stalled.map((exchange) => within(exchange.answer, 5000)));
    const attacked = await victimSeries(victim, reads, VICTIM_SAMPLES);
    // The client goes away: sockets destroyed with megabytes unread.
    for (const { socket } of stalled) socket.destroy();
    await Promise.all(stalled.map(({ socket }) => new Promise((resolve) => (socket.destroyed ? resolve(undefined) : socket.once('close', resolve)))));
    const left = performance.now();
    // The gateway sees the clients go as soon as their resets arrive: the attacker's share is free again (a one-byte range answers 206, not 429).
    const freed = await until(() => rangeProbe(stack.info.gatewayUrl, attacker.token, download), (status) => status !== 429, 5000, 20);
    const freedMs = performance.now() - left;
    // And every connection of the stream pool is back: as many whole downloads as the attacker's share all answer 200 and end.
    const again = await Promise.all(
      Array.from({ length: Number(SETTINGS.UPSTREAM_TENANT_STREAMS) }, () =>
        fetch(`${stack.info.gatewayUrl}${download}`, { headers: { authorization: `Bearer ${attacker.token}` }, signal: AbortSignal.timeout(10_000) })
          .then(async (response) => ({ status: response.status, bytes: (await response.arrayBuffer()).byteLength }))
          .catch(() => ({ status: 0, bytes: 0 })),
      ),
    );
    const after = await victimSeries(victim, reads, VICTIM_SAMPLES);
    report('unread downloads, then destroyed sockets', quiet, attacked, after);
    console.log(`[gateway-fairness] stalled downloads answered: ${JSON.stringify(statuses)}; after the attacker left, its share free in ${freedMs.toFixed(0)} ms (${freed}), its ${again.length} downloads: ${JSON.stringify(again.map((a) => a.status))}`);

    expectWithinBound(quiet, attacked, 'during the unread downloads');
    expectWithinBound(quiet, after, 'after the attacker left');
    expect(freed).toBe(206);
    expect(freedMs).toBeLessThan(1000);
    expect(again).toEqual(again.map(() => ({ status: 200, bytes: BIG_FILE_BYTES })));
    // Its share of the stream pool, the rest refused with the API's 429.
    expect(statuses.filter((status) => status === 200)).toHaveLength(Number(SETTINGS.UPSTREAM_TENANT_STREAMS));
    expect(statuses.filter((status) => status === 429)).toHaveLength(stalled.length - Number(SETTINGS.UPSTREAM_TENANT_STREAMS));
  });

  it('a download whose client never reads is cut off at the minimum rate, giving its share back', { timeout: 120_000 }, async () => {
    const attacker = await createTenant(stack.info, 'slow-reader');
    const download = await materializationOf(attacker, BIG_FILE_BYTES);
    const share = Number(SETTINGS.UPSTREAM_TENANT_STREAMS);
    const stalled = Array.from({ length: share }, () => stalledDownload(stack.info.gatewayUrl, attacker.token, download));
    expect(await Promise.all(stalled.map((exchange) => exchange.answer))).toEqual(stalled.map(() => 200));
    const started = performance.now();
    // Evidence of the cut, while both clients keep their sockets open and read nothing: the
    // tenant's share comes back (a one-byte range answers 206 rather than 429).
    const freed = await until(() => rangeProbe(stack.info.gatewayUrl, attacker.token, download), (status) => status !== 429, 3 * Number(SETTINGS.BODY_RATE_WINDOW_MS) + 5000, 100);
    const cutMs = performance.now() - started;
    // And each stalled client, reading at last, gets the bytes that were on their way and then the end: less than the file.
    const received = await Promise.all(
      stalled.map(
        ({ socket }) =>
          new Promise<number>((resolve) => {
            // Head and body: the whole file has come once this passes its size.
            const done = () => resolve(socket.bytesRead);
            socket.on('data', () => {
              if (socket.bytesRead >= BIG_FILE_BYTES) done();
            });
            socket.once('close', done);
            socket.resume();
          }),
      ),
    );
    for (const { socket } of stalled) socket.destroy();
    console.log(`[gateway-fairness] unread downloads: the share came back after ${cutMs.toFixed(0)} ms (${freed}); bytes the stalled clients then received: ${JSON.stringify(received)} of ${BIG_FILE_BYTES}`);
    expect(freed).toBe(206);
    // At most two windows: the one it stalled in and the next, and the machine's noise.
    expect(cutMs).toBeLessThan(3 * Number(SETTINGS.BODY_RATE_WINDOW_MS) + 2000);
    for (const bytes of received) expect(bytes).toBeLessThan(BIG_FILE_BYTES);
  });

  it("uploads dripping 4 bytes a second are cut off and capped, and the victim's uploads and deployment reads are served beside them", { timeout: 120_000 }, async () => {
    const attacker = await createTenant(stack.info, 'drip-uploads');
    const victim = await createTenant(stack.info, 'victim');
    await materializationOf(victim, 4096);
    const reads = ['/environments/prod/deployments', '/environments/prod/assets/big/materializations', '/environments'];
    const bundle = await makeBundle({ 'assets/a.js': 'export default async () => {};' });
    /** The victim's upload's status (0 when not answered within 10 s). */
    const upload = () =>
      fetch(`${victim.api.baseUrl}/bundles`, { method: 'POST', body: bundle, headers: { authorization: `Bearer ${victim.token}`, 'content-type': 'application/gzip' }, signal: AbortSignal.timeout(10_000) })
        .then(async (response) => (await response.arrayBuffer(), { status: response.status }))
        .catch(() => ({ status: 0 }));
    const quiet = await victimSeries(victim, reads, VICTIM_SAMPLES);
    const quietUpload = performance.now();
    expect((await upload()).status).toBeLessThan(300);
    const quietUploadMs = performance.now() - quietUpload;

    // More drips than the deployment-service's connections (API and stream pools together), of a bundle of 64 kB.
    const dripped = await makeBundle({ 'assets/a.js': 'export default async () => {};', 'data.txt': randomBytes(48 * 1024).toString('base64') });
    const drips = Array.from({ length: 14 }, () => drippingUpload(stack.info.gatewayUrl, attacker.token, dripped));
    const attacked = await victimSeries(victim, reads, VICTIM_SAMPLES);
    const duringUpload = performance.now();
    const victimUpload = await upload();
    const duringUploadMs = performance.now() - duringUpload;
    const answers = await Promise.all(drips.map((drip) => within(drip.answer, 3 * Number(SETTINGS.BODY_RATE_WINDOW_MS) + 5000)));
    const cutOff = (await Promise.all(drips.map((drip) => within(drip.text, 0)))).filter((text) => typeof text === 'string' && text.includes('sent too slowly'));
    for (const drip of drips) {
      drip.stop();
      drip.socket.destroy();
    }
    report('dripping uploads', quiet, attacked);
    console.log(`[gateway-fairness] drip uploads answered: ${JSON.stringify(answers)}; victim upload ${quietUploadMs.toFixed(0)} ms quiet, ${duringUploadMs.toFixed(0)} ms during (${victimUpload.status})`);

    expectWithinBound(quiet, attacked, 'during the dripping uploads');
    expect(victimUpload.status).toBeLessThan(300);
    expect(duringUploadMs).toBeLessThanOrEqual(2 * quietUploadMs + SLACK_MS);
    // Every drip is answered: its share cut off as too slow (422), the others refused at once (429).
    expect(answers.filter((answer) => answer === 429)).toHaveLength(drips.length - Number(SETTINGS.UPSTREAM_TENANT_STREAMS));
    expect(answers.filter((answer) => answer === 422)).toHaveLength(Number(SETTINGS.UPSTREAM_TENANT_STREAMS));
    // Cut off by the gateway (the message names the rate), not refused by the service.
    expect(cutOff).toHaveLength(Number(SETTINGS.UPSTREAM_TENANT_STREAMS));
  });

  it("one tenant's many concurrent requests are refused past its in-flight share with 429 rate_limited, and the victim is served beside them", { timeout: 120_000 }, async () => {
    const attacker = await createTenant(stack.info, 'many-requests');
    const victim = await createTenant(stack.info, 'victim');
    await materializationOf(victim, 4096);
    const reads = ['/environments', '/environments/prod'];
    const quiet = await victimSeries(victim, reads, VICTIM_SAMPLES);
    // Three tokens of the attacker, each within its own rate limit: the share is the tenant's, whatever its tokens.
    const tokens = [attacker.token, ...(await Promise.all([anotherTokenOf(stack.info, attacker), anotherTokenOf(stack.info, attacker)])).map((client) => client.token!)];
    // Plain fetch, not the checking client: the test process's own work would time the victim too.
    const ask = (token: string) =>
      fetch(`${attacker.api.baseUrl}/environments`, { headers: { authorization: `Bearer ${token}` } }).then(async (response) => ({
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        body: (await response.json()) as unknown,
      }));
    // Waves of three times its share at once, one after another for as long as the victim is timed.
    const share = Number(SETTINGS.UPSTREAM_TENANT_IN_FLIGHT);
    let victimDone = false;
    const answers: Array<Awaited<ReturnType<typeof ask>>> = [];
    const waves = (async () => {
      while (!victimDone) answers.push(...(await Promise.all(Array.from({ length: 3 * share }, (_, i) => ask(tokens[i % tokens.length]!)))));
    })();
    const attacked = await victimSeries(victim, reads, VICTIM_SAMPLES).finally(() => (victimDone = true));
    await waves;
    const refused = answers.filter((answer) => answer.status === 429);
    report('concurrent requests past the share', quiet, attacked);
    console.log(`[gateway-fairness] ${answers.length} requests in waves of ${3 * share}: ${answers.length - refused.length} answered 200, ${refused.length} refused 429`);

    expect(answers.every((answer) => answer.status === 200 || answer.status === 429)).toBe(true);
    expect(refused.every((answer) => ErrorBody.parse(answer.body).error.code === 'rate_limited')).toBe(true);
    const overShare = refused.filter((answer) => ErrorBody.parse(answer.body).error.message.includes(`${share} requests in flight`));
    expect(overShare.length).toBeGreaterThan(0);
    expect(ErrorBody.parse(overShare[0]!.body).error.message).toBe(`This tenant has ${share} requests in flight through the gateway, its share; retry once one has finished.`);
    expect(overShare[0]!.retryAfter).toBe('1');
    expectWithinBound(quiet, attacked, 'during the concurrent requests');
  });
});
