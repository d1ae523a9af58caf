import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { ATTEMPT_LEASE_HEADER, AttemptStarted, ErrorBody, INTERNAL_HEADERS, PoolStatus, Run, type ErrorCode } from '@envengine/contracts';
import { idFloorAt, newId } from '@envengine/resource-ids';
import { anotherTokenOf, createTenant, until, type ApiClient, type ApiResponse, type TestTenant } from '@envengine/test-harness';
import { deployRunsProject, issueCredential, RUN_TEST_SETTINGS } from './runs-fixtures.ts';

const stack = inject('stack');

/** An attempt this file holds as a pool worker would: started through the worker API, with its lease. */
interface Held {
  runId: string;
  attemptId: string;
  lease: string;
}

/** One worker API call as a worker makes it; `lease` goes in the lease header, `raw` replaces the JSON body. */
interface WorkerCall {
  method: 'GET' | 'POST';
  path: string;
  json?: unknown;
  raw?: string;
  lease?: string;
}

type Route = 'heartbeat' | 'logs' | 'upstream' | 'connection' | 'materialization' | 'bundle' | 'release' | 'finish';

const WORKER = { id: 'owner-worker-1', name: 'owner-worker', executor: 'remote', concurrency: 2, sandbox: 'bwrap' } as const;
/**
 * The control's materialization, minted once its attempt has started, as a worker mints one:
 * an id more than 30 s older than its attempt's start is refused (the worker's clock).
 */
let materializationId = '';
const LOG_MESSAGE = 'written by the worker API test';
/** The owner's `prod` lake, set once its tenant exists. */
let lake: string;
/** Where the engine stores a materialization of `orders` with this id: the only location it records. */
const ordersLocation = (id: string) => `file://${lake}/orders/${id}.parquet`;

/**
 * A valid call on each worker route about `held`, as its own pool's worker would make it
 * (the last test proves each succeeds); the other tests send them with something wrong.
 */
function callsAbout(held: Held, bundleRef: string): Record<Route, WorkerCall> {
  const attempt = `/worker/attempts/${held.attemptId}`;
  const { lease } = held;
  const columns = [{ name: 'id', type: 'integer', nullable: false }, { name: 'amount', type: 'number', nullable: true }];
  return {
    heartbeat: { method: 'POST', path: '/worker/heartbeat', json: { worker: WORKER, attempts: [{ id: held.attemptId, lease, asset: 'orders' }] } },
    logs: { method: 'POST', path: `${attempt}/logs`, lease, json: { lines: [{ seq: 0, at: new Date().toISOString(), asset: 'orders', message: LOG_MESSAGE }] } },
    // totals declares orders in its deps: what it may read.
    upstream: { method: 'GET', path: `${attempt}/upstreams/orders?asset=totals`, lease },
    connection: { method: 'POST', path: `${attempt}/connections/warehouse`, lease, json: { asset: 'orders' } },
    materialization: {
      method: 'POST',
      path: `${attempt}/assets/orders/materializations`,
      lease,
      json: { id: materializationId, location: ordersLocation(materializationId), bytes: 100, row_count: 3, columns },
    },
    bundle: { method: 'GET', path: `/worker/bundles/${bundleRef}` },
    release: { method: 'POST', path: `${attempt}/release`, lease, json: { reason: 'handed back by the test' } },
    finish: { method: 'POST', path: `${attempt}/finish`, lease, json: { status: 'succeeded', error: null, assets: [{ key: 'orders', status: 'succeeded', error: null }] } },
  };
}

function send(api: ApiClient, call: WorkerCall) {
  const headers: Record<string, string> = call.lease === undefined ? {} : { [ATTEMPT_LEASE_HEADER]: call.lease };
  if (call.raw !== undefined) return api.request(call.method, call.path, { raw: call.raw, headers: { ...headers, 'content-type': 'application/json' } });
  return api.request(call.method, call.path, { json: call.json, headers });
}

/** What the tests compare: the status, and the error code or (on success) the data. */
function outcome(response: ApiResponse<{ data?: unknown } | undefined>): [number, unknown] {
  if (response.status < 300) return [response.status, response.body?.data ?? '(a body that is not JSON)'];
  const error = ErrorBody.safeParse(response.body);
  return [response.status, error.success ? error.data.error.code : `not an error body: ${response.text.slice(0, 200)}`];
}

interface BadCall {
  title: string;
  route: Route;
  /** The valid call made wrong; `sibling` is another running attempt of the same tenant. */
  change: (call: WorkerCall, sibling: Held) => WorkerCall;
  status: number;
  code: ErrorCode;
  /** A field the error's details must name. */
  detailPath?: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each edit knows the body it changes.
const body = (edit: (json: any) => unknown) => (call: WorkerCall): WorkerCall => ({ ...call, json: edit(call.json) });
const lease = (value: string | undefined) => (call: WorkerCall): WorkerCall => ({ ...call, lease: value });
const siblingLease = (call: WorkerCall, sibling: Held): WorkerCall => ({ ...call, lease: sibling.lease });
const firstLine = (json: { lines: object[] }, edit: object) => ({ lines: [{ ...json.lines[0], ...edit }] });

const BAD_CALLS: BadCall[] = [
  { title: 'logs without the lease header', route: 'logs', change: lease(undefined), status: 422, code: 'invalid_request', detailPath: ATTEMPT_LEASE_HEADER },
  { title: 'a materialization without the lease header', route: 'materialization', change: lease(undefined), status: 422, code: 'invalid_request', detailPath: ATTEMPT_LEASE_HEADER },
  { title: 'a release without the lease header', route: 'release', change: lease(undefined), status: 422, code: 'invalid_request', detailPath: ATTEMPT_LEASE_HEADER },
  { title: 'logs with a lease never given, in any text', route: 'logs', change: lease('not a lease!'), status: 409, code: 'lease_superseded' },
  { title: 'a finish with a short made-up lease', route: 'finish', change: lease('stale'), status: 409, code: 'lease_superseded' },
  { title: 'a finish with a lease of 201 characters', route: 'finish', change: lease('a'.repeat(201)), status: 422, code: 'invalid_request', detailPath: ATTEMPT_LEASE_HEADER },
  { title: 'a finish with a made-up lease', route: 'finish', change: lease('made-up-lease-0123456789'), status: 409, code: 'lease_superseded' },
  { title: 'a finish with the lease of another attempt', route: 'finish', change: siblingLease, status: 409, code: 'lease_superseded' },
  { title: 'logs with the lease of another attempt', route: 'logs', change: siblingLease, status: 409, code: 'lease_superseded' },
  { title: 'an upstream read with the lease of another attempt', route: 'upstream', change: siblingLease, status: 409, code: 'lease_superseded' },
  { title: 'a connection with the lease of another attempt', route: 'connection', change: siblingLease, status: 409, code: 'lease_superseded' },
  { title: 'a materialization with the lease of another attempt', route: 'materialization', change: siblingLease, status: 409, code: 'lease_superseded' },
  { title: 'a release with the lease of another attempt', route: 'release', change: siblingLease, status: 409, code: 'lease_superseded' },
  { title: 'a finish of an unknown attempt', route: 'finish', change: (call) => ({ ...call, path: `/worker/attempts/${newId('att')}/finish` }), status: 404, code: 'not_found' },
  { title: 'a finish of an attempt id of 101 characters', route: 'finish', change: (call) => ({ ...call, path: `/worker/attempts/${'a'.repeat(101)}/finish` }), status: 422, code: 'invalid_request', detailPath: 'path.id' },
  { title: 'a finish with status outside its enum', route: 'finish', change: body((json) => ({ ...json, status: 'done' })), status: 422, code: 'invalid_request', detailPath: 'status' },
  { title: 'a finish with assets not a list', route: 'finish', change: body((json) => ({ ...json, assets: 'orders' })), status: 422, code: 'invalid_request', detailPath: 'assets' },
  { title: 'a finish with an unknown field', route: 'finish', change: body((json) => ({ ...json, run_status: 'succeeded' })), status: 422, code: 'invalid_request' },
  { title: 'logs with seq as a string', route: 'logs', change: body((json) => firstLine(json, { seq: '0' })), status: 422, code: 'invalid_request', detailPath: 'lines.0.seq' },
  { title: 'logs with at not a date-time', route: 'logs', change: body((json) => firstLine(json, { at: 'yesterday' })), status: 422, code: 'invalid_request', detailPath: 'lines.0.at' },
  { title: 'logs with an unknown field in a line', route: 'logs', change: body((json) => firstLine(json, { level: 'info' })), status: 422, code: 'invalid_request' },
  { title: 'logs with no lines', route: 'logs', change: body(() => ({ lines: [] })), status: 422, code: 'invalid_request', detailPath: 'lines' },
  { title: 'logs that are not JSON', route: 'logs', change: (call) => ({ ...call, raw: '{"lines": [' }), status: 400, code: 'invalid_json' },
  { title: 'a materialization whose id is not mat_…', route: 'materialization', change: body((json) => ({ ...json, id: 'mine' })), status: 422, code: 'invalid_request', detailPath: 'id' },
  { title: 'a materialization with bytes as a string', route: 'materialization', change: body((json) => ({ ...json, bytes: '100' })), status: 422, code: 'invalid_request', detailPath: 'bytes' },
  { title: 'a materialization with an unknown field', route: 'materialization', change: body((json) => ({ ...json, status: 'latest' })), status: 422, code: 'invalid_request' },
  {
    title: 'a materialization of an asset outside the attempt',
    route: 'materialization',
    change: (call) => ({ ...call, path: call.path.replace('/assets/orders/', '/assets/bad_rows/') }),
    status: 422,
    code: 'invalid_request',
    detailPath: 'key',
  },
  // An asset reads only the upstreams its manifest entry declares in deps (totals declares orders), whatever the worker asks.
  { title: 'an upstream read that names no reading asset', route: 'upstream', change: (call) => ({ ...call, path: call.path.replace('?asset=totals', '') }), status: 422, code: 'invalid_request', detailPath: 'query.asset' },
  { title: 'an upstream read of an asset the reader does not declare', route: 'upstream', change: (call) => ({ ...call, path: call.path.replace('/upstreams/orders', '/upstreams/bad_rows') }), status: 422, code: 'invalid_request', detailPath: 'key' },
  { title: 'an upstream read of the reading asset itself', route: 'upstream', change: (call) => ({ ...call, path: call.path.replace('/upstreams/orders?asset=totals', '/upstreams/orders?asset=orders') }), status: 422, code: 'invalid_request', detailPath: 'key' },
  { title: 'an upstream read by an asset outside the attempt', route: 'upstream', change: (call) => ({ ...call, path: call.path.replace('?asset=totals', '?asset=flaky_total') }), status: 422, code: 'invalid_request', detailPath: 'query.asset' },
  { title: 'a connection with an unknown field', route: 'connection', change: body((json) => ({ ...json, binding: 'warehouse' })), status: 422, code: 'invalid_request' },
  { title: 'a connection that names no asset', route: 'connection', change: body(() => ({})), status: 422, code: 'invalid_request', detailPath: 'asset' },
  // An asset resolves only the binding its manifest entry declares (orders declares warehouse).
  {
    title: 'a connection of a binding the asset does not declare',
    route: 'connection',
    change: (call) => ({ ...call, path: call.path.replace('/connections/warehouse', '/connections/gate') }),
    status: 422,
    code: 'invalid_request',
    detailPath: 'name',
  },
  { title: 'a connection for an asset outside the attempt', route: 'connection', change: body(() => ({ asset: 'gated' })), status: 422, code: 'invalid_request', detailPath: 'key' },
  // The location is the engine's to compute: anything else is refused and nothing is recorded.
  { title: 'a materialization at a forged location', route: 'materialization', change: body((json) => ({ ...json, location: 'file:///etc/envengine/stolen.parquet' })), status: 422, code: 'invalid_request', detailPath: 'location' },
  {
    title: 'a materialization at a location escaping the prefix',
    route: 'materialization',
    change: body((json) => ({ ...json, location: `file://${lake}/orders/../../../other/orders/${json.id}.parquet` })),
    status: 422,
    code: 'invalid_request',
    detailPath: 'location',
  },
  {
    title: 'a materialization at the location of another id',
    route: 'materialization',
    change: body((json) => ({ ...json, location: ordersLocation(newId('mat')) })),
    status: 422,
    code: 'invalid_request',
    detailPath: 'location',
  },
  { title: 'a release with a reason that is not a string', route: 'release', change: body(() => ({ reason: 7 })), status: 422, code: 'invalid_request', detailPath: 'reason' },
  { title: 'a heartbeat with concurrency as a string', route: 'heartbeat', change: body((json) => ({ ...json, worker: { ...json.worker, concurrency: '2' } })), status: 422, code: 'invalid_request', detailPath: 'worker.concurrency' },
  { title: 'a heartbeat with an unknown field', route: 'heartbeat', change: body((json) => ({ ...json, status: 'ok' })), status: 422, code: 'invalid_request' },
];

describe('the worker API refuses other tenants and bad input, and changes nothing', () => {
  let owner: TestTenant;
  let ownerPool: ApiClient;
  let readers: ApiClient[];
  let intruderPool: ApiClient;
  let bundleRef: string;
  /** The attempt every call is about, and another running attempt of the same tenant. */
  let mine: Held;
  let sibling: Held;
  let before: Awaited<ReturnType<typeof stateOf>>;

  /** A queued attempt of the owner (no worker runs for its pool), started as its pool's worker starts one. */
  async function start(attemptId: string): Promise<string> {
    const started = await ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: WORKER });
    expect(started.status).toBe(200);
    return AttemptStarted.parse(started.body.data).lease;
  }

  async function hold(): Promise<Held> {
    // totals too, so that the attempt has an asset that reads (orders, its declared dep).
    const run = Run.parse((await owner.api.post('/environments/prod/runs', { assets: ['orders', 'totals'] })).body.data);
    const attemptId = run.attempts[0]!.id;
    return { runId: run.id, attemptId, lease: await start(attemptId) };
  }

  /**
   * What the owner sees of the held attempt: its run, log lines, pool and assets. Read
   * before and after every call of this file, each through a token of its own, so that no
   * token reaches the per-token rate limit however fast the calls go.
   */
  async function stateOf(held: Held) {
    const [run, logs, pool, assets] = await Promise.all([
      readers[0]!.get(`/runs/${held.runId}`),
      readers[1]!.get(`/runs/${held.runId}/logs`),
      readers[2]!.get('/pool'),
      readers[3]!.get('/environments/prod/assets'),
    ]);
    return {
      run: Run.parse(run.body.data),
      logs: logs.body.data as unknown[],
      // Heartbeat ages change by the millisecond; which workers are there does not.
      pool: { workers: pool.body.data.workers.map((worker: { name: string }) => worker.name), attempts: pool.body.data.attempts },
      assets: assets.body.data as unknown[],
    };
  }

  beforeAll(async () => {
    owner = await createTenant(stack, 'worker-api');
    readers = await Promise.all([0, 1, 2, 3].map(() => anotherTokenOf(stack, owner)));
    const intruder = await createTenant(stack, 'worker-api-intruder');
    // `remote`, and no worker runs for the owner's pool: the attempts wait for this file.
    lake = join(stack.dataDir, 'lake', owner.tenantId);
    bundleRef = await deployRunsProject(owner, lake, 'remote');
    ownerPool = owner.api.withToken((await issueCredential(owner)).token);
    intruderPool = intruder.api.withToken((await issueCredential(intruder)).token);
    mine = await hold();
    materializationId = newId('mat');
    sibling = await hold();
  });

  /** Renews both leases (4 s in tests) so that the reaper changes nothing during a test. */
  async function keepAlive(): Promise<void> {
    const alive = await ownerPool.post('/worker/heartbeat', {
      worker: WORKER,
      attempts: [mine, sibling].map((held) => ({ id: held.attemptId, lease: held.lease, asset: null })),
    });
    expect([alive.status, alive.body.data]).toEqual([200, { superseded: [] }]);
  }

  beforeEach(async () => {
    await keepAlive();
    before = await stateOf(mine);
    expect(before.run.attempts[0]!.status).toBe('running');
  });

  it("counts a pool worker that calls itself the engine's runner as a remote worker, never among the engine's runners", async () => {
    const impostor = { ...WORKER, id: 'impostor-1', name: 'impostor', executor: 'local', concurrency: 64 } as const;
    expect((await ownerPool.post('/worker/heartbeat', { worker: impostor, attempts: [] })).status).toBe(200);
    const pool = PoolStatus.parse((await owner.api.get('/pool')).body.data);
    expect(pool.engine_runners.map((runner) => runner.name)).not.toContain('impostor');
    // The positive control: it is listed, as what its credential makes it.
    expect(pool.workers.find((worker) => worker.name === 'impostor')).toMatchObject({ executor: 'remote', concurrency: 64 });
    // It leaves at once (a graceful stop): the tests after compare the pool's workers before and after a call,
    // and a row left to age out would leave between the two.
    expect((await ownerPool.post('/worker/heartbeat', { worker: impostor, attempts: [], draining: true, stopped: true })).status).toBe(200);
    expect(PoolStatus.parse((await owner.api.get('/pool')).body.data).workers.map((worker) => worker.name)).not.toContain('impostor');
  });

  it("answers another tenant's pool 404 on every route, even with the attempt's own lease", async () => {
    const answers: unknown[] = [];
    for (const [route, call] of Object.entries(callsAbout(mine, bundleRef))) {
      answers.push([route, ...outcome(await send(intruderPool, call))]);
    }
    answers.push(['start', ...outcome(await intruderPool.post(`/worker/attempts/${mine.attemptId}/start`, { worker: WORKER }))]);
    expect(answers).toEqual([
      // A heartbeat is about the worker, not one attempt: the lease is not renewed, and the worker is told to stop.
      ['heartbeat', 200, { superseded: [mine.attemptId] }],
      ['logs', 404, 'not_found'],
      ['upstream', 404, 'not_found'],
      ['connection', 404, 'not_found'],
      ['materialization', 404, 'not_found'],
      ['bundle', 404, 'not_found'],
      ['release', 404, 'not_found'],
      ['finish', 404, 'not_found'],
      ['start', 404, 'not_found'],
    ]);
    expect(await stateOf(mine)).toEqual(before);
  });

  it('takes the internal credential on no public path: the worker API and the rest answer 401', async () => {
    const asEngine = (path: string, method = 'GET') =>
      fetch(`${stack.gatewayUrl}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${stack.internalCredential}`, [INTERNAL_HEADERS.tenantId]: owner.tenantId, [INTERNAL_HEADERS.credential]: stack.internalCredential },
      });
    for (const [path, method] of [
      [`/worker/attempts/${mine.attemptId}/upstreams/orders`, 'GET'],
      [`/worker/bundles/${bundleRef}`, 'GET'],
      ['/environments', 'GET'],
      [`/runs/${mine.runId}`, 'GET'],
    ] as const) {
      const response = await asEngine(path, method);
      expect([path, response.status, ((await response.json()) as { error: { code: string } }).error.code]).toEqual([path, 401, 'unauthorized']);
    }
    expect(await stateOf(mine)).toEqual(before);
  });

  it('answers an API token 401 on every worker route', async () => {
    for (const [route, call] of Object.entries(callsAbout(mine, bundleRef))) {
      expect([route, ...outcome(await send(owner.api, call))]).toEqual([route, 401, 'unauthorized']);
    }
    expect(await stateOf(mine)).toEqual(before);
  });

  it.each(BAD_CALLS)('$title → $status $code', async (bad) => {
    const response = await send(ownerPool, bad.change(callsAbout(mine, bundleRef)[bad.route], sibling));
    expect(outcome(response)).toEqual([bad.status, bad.code]);
    const { error } = ErrorBody.parse(response.body);
    expect(error.message.length).toBeGreaterThan(0);
    if (bad.detailPath) expect(error.details.map((detail) => detail.path)).toContain(bad.detailPath);
    expect(await stateOf(mine)).toEqual(before);
  });

  it("refuses a materialization id another tenant's attempt recorded: 422 naming the id, the same as its own tenant's, never 500, and changes nothing", async () => {
    const mongo = await MongoClient.connect(stack.mongoUrl);
    try {
      const records = mongo.db(stack.databases['deployment-service']).collection<{ _id: string }>('materializations');
      const call = callsAbout(mine, bundleRef).materialization;
      for (const holder of [newId('ten'), owner.tenantId]) {
        const id = newId('mat');
        await records.insertOne({ _id: id, tenant_id: holder, environment_id: newId('env'), asset_key: 'orders', columns: [], row_count: 0, location: null, bytes: null, run_id: null, attempt_id: newId('att'), status: 'latest', quarantine: null, inserted_at: new Date(0) } as never);
        const response = await send(ownerPool, { ...call, json: { ...(call.json as object), id, location: ordersLocation(id) } });
        expect([holder === owner.tenantId ? 'own' : 'foreign', ...outcome(response)]).toEqual([holder === owner.tenantId ? 'own' : 'foreign', 422, 'invalid_request']);
        const { error } = ErrorBody.parse(response.body);
        expect(error.message).toBe(`Materialization id ${id} is taken: each emit records a new id, and nothing was recorded.`);
        expect(error.details.map((detail) => detail.path)).toEqual(['id']);
        await records.deleteOne({ _id: id });
      }
      expect(await stateOf(mine)).toEqual(before);
    } finally {
      await mongo.close();
    }
  });

  it("refuses a materialization id minted by a clock far behind or ahead of the engine's: 422 naming the time, and nothing recorded", async () => {
    const call = callsAbout(mine, bundleRef).materialization;
    for (const [skew, says] of [[-3_600_000, /, \d+ s before its attempt started \(/], [3_600_000, /, \d+ s after the engine's now/]] as const) {
      // Not newId: it never goes back in time, and a future one would move every later id of this process with it.
      const id = idFloorAt('mat', Date.now() + skew);
      const response = await send(ownerPool, { ...call, json: { ...(call.json as object), id, location: ordersLocation(id) } });
      expect(outcome(response)).toEqual([422, 'invalid_request']);
      const { error } = ErrorBody.parse(response.body);
      expect(error.message).toMatch(says);
      expect(error.message).toMatch(/the worker's clock is off the engine's by more than 30 s/);
      expect(error.details.map((detail) => detail.path)).toEqual(['id']);
    }
    expect(await stateOf(mine)).toEqual(before);
  });

  it('answers a materialization racing its attempt\'s cancel 201 with the record kept, or 409 with no record left', async () => {
    const mongo = await MongoClient.connect(stack.mongoUrl);
    try {
      const records = mongo.db(stack.databases['deployment-service']).collection('materializations');
      const answers = new Map<number, number>();
      for (let round = 0; round < 12; round += 1) {
        // Rounds take seconds on a busy machine: the leases of the attempts the later tests use stay held.
        await keepAlive();
        const held = await hold();
        const call = callsAbout(held, bundleRef).materialization;
        const id = newId('mat');
        // The cancel lands before the lease check, after the outcome, or between the record and the outcome.
        const [written, canceled] = await Promise.all([
          send(ownerPool, { ...call, json: { ...(call.json as object), id, location: ordersLocation(id) } }),
          owner.api.post(`/runs/${held.runId}/cancel`, {}),
        ]);
        expect(canceled.status).toBe(200);
        expect([201, 409]).toContain(written.status);
        answers.set(written.status, (answers.get(written.status) ?? 0) + 1);
        expect(await records.countDocuments({ _id: id as never }), `round ${round}: answered ${written.status}`).toBe(written.status === 201 ? 1 : 0);
        // Kept ones would be newer than the one the control below records.
        await records.deleteOne({ _id: id as never });
      }
      console.log(`materialization racing a cancel: ${JSON.stringify(Object.fromEntries(answers))}`);
    } finally {
      await mongo.close();
    }
  });

  it("ends an attempt exactly once when its finish races its run's cancel: one wins, the other is refused, and the run agrees", async () => {
    const winners = { finish: 0, cancel: 0 };
    for (let round = 0; round < 12; round += 1) {
      await keepAlive();
      const held = await hold();
      const failing = { ...callsAbout(held, bundleRef).finish, json: { status: 'failed', error: 'failed by the test', assets: [{ key: 'orders', status: 'failed', error: 'failed by the test' }] } };
      // Both sent at once, each on its own connection.
      const [finished, canceled] = await Promise.all([send(ownerPool, failing), owner.api.post(`/runs/${held.runId}/cancel`, {})]);
      const run = Run.parse((await readers[0]!.get(`/runs/${held.runId}`)).body.data);
      const answers = `round ${round}: finish ${JSON.stringify(outcome(finished))}, cancel ${JSON.stringify(outcome(canceled))}, run ${run.status}`;
      expect([finished.status, canceled.status].filter((status) => status === 200), answers).toHaveLength(1);
      if (finished.status === 200) {
        winners.finish += 1;
        expect(outcome(canceled), answers).toEqual([409, 'run_finished']);
        expect([run.status, run.attempts.map((attempt) => attempt.status)], answers).toEqual(['failed', ['failed']]);
      } else {
        winners.cancel += 1;
        expect(outcome(finished), answers).toEqual([409, 'lease_superseded']);
        expect([run.status, run.attempts.map((attempt) => attempt.status)], answers).toEqual(['canceled', ['canceled']]);
      }
    }
    console.log(`finish racing a cancel, winners: ${JSON.stringify(winners)}`);
  });

  it('takes a recorded materialization back, and answers 409, when the lease is superseded between the record and the outcome', async () => {
    // Forced, not hoped for: the test holds the attempt's document in a transaction of its
    // own that supersedes the lease. The record (another scope's database) is written; the
    // outcome's conditional write waits on the held document; once the test commits, that
    // write no longer matches, and the record must be taken back.
    const mongo = await MongoClient.connect(stack.mongoUrl);
    const session = mongo.startSession();
    try {
      const attempts = mongo.db(stack.databases['placement-service']).collection<{ _id: string; lease: string }>('attempts');
      const records = mongo.db(stack.databases['deployment-service']).collection<{ _id: string }>('materializations');
      const held = await hold();
      session.startTransaction();
      await attempts.updateOne({ _id: held.attemptId }, { $set: { lease: 'superseded-by-the-test' } }, { session });
      const call = callsAbout(held, bundleRef).materialization;
      const id = newId('mat');
      const answer = send(ownerPool, { ...call, json: { ...(call.json as object), id, location: ordersLocation(id) } });
      // Evidence that the request is past the record and waiting on the outcome: the record exists.
      await until(() => records.countDocuments({ _id: id }), (count) => count === 1, 15_000, 20);
      await session.commitTransaction();
      const written = await answer;
      expect([written.status, ErrorBody.parse(written.body).error.code]).toEqual([409, 'lease_superseded']);
      expect(await records.countDocuments({ _id: id })).toBe(0);
      expect((await owner.api.post(`/runs/${held.runId}/cancel`, {})).status).toBe(200);
    } finally {
      await session.endSession();
      await mongo.close();
    }
  });

  it('answers a record sent again after it committed (its answer lost) as recorded, also once its attempt has ended; a new one then is refused', async () => {
    // The worker removes the file of a record refused for good, so a refused replay would leave the record without its file (seen in the soak: a partition during the record).
    const held = await hold();
    const call = callsAbout(held, bundleRef).materialization;
    const id = newId('mat');
    const record = (materializationId: string) => send(ownerPool, { ...call, json: { ...(call.json as object), id: materializationId, location: ordersLocation(materializationId) } });
    const first = await record(id);
    expect(first.status).toBe(201);
    expect((await owner.api.post(`/runs/${held.runId}/cancel`, {})).status).toBe(200);
    const replayed = await record(id);
    expect([replayed.status, replayed.body.data]).toEqual([201, first.body.data]);
    // A materialization the ended lease never recorded is refused, and not recorded.
    const other = newId('mat');
    const late = await record(other);
    expect([late.status, ErrorBody.parse(late.body).error.code]).toEqual([409, 'lease_superseded']);
    const mongo = await MongoClient.connect(stack.mongoUrl);
    try {
      const records = mongo.db(stack.databases['deployment-service']).collection<{ _id: string }>('materializations');
      expect(await records.countDocuments({ _id: { $in: [id, other] } })).toBe(1);
      await records.deleteOne({ _id: id });
    } finally {
      await mongo.close();
    }
    // Another worker's lease, replaying the same record, is refused.
    const forged = await send(ownerPool, { ...call, lease: 'made-up-lease-0123456789', json: { ...(call.json as object), id, location: ordersLocation(id) } });
    expect([forged.status, ErrorBody.parse(forged.body).error.code]).toEqual([409, 'lease_superseded']);
  });

  it("keeps an asset's recorded materialization when the finish then reports the asset failed (its time ran out while the record was under way)", async () => {
    // Seen in the soak on a loaded machine: the record committed, then the finish said the
    // asset failed. Like an asset that emitted and then threw, its rows stand: the outcome
    // is failed, it names the materialization, and a retry does not run the asset again.
    const held = await hold();
    const call = callsAbout(held, bundleRef).materialization;
    const id = newId('mat');
    const recorded = await send(ownerPool, { ...call, json: { ...(call.json as object), id, location: ordersLocation(id) } });
    expect(recorded.status).toBe(201);
    const finished = await send(ownerPool, {
      method: 'POST',
      path: `/worker/attempts/${held.attemptId}/finish`,
      lease: held.lease,
      json: { status: 'failed', error: 'asset orders timed out', assets: [{ key: 'orders', status: 'failed', error: 'timed out' }, { key: 'totals', status: 'skipped', error: null }] },
    });
    expect(finished.status, finished.text).toBe(200);
    const run = Run.parse((await owner.api.get(`/runs/${held.runId}`)).body.data);
    const first = run.attempts.find((attempt) => attempt.id === held.attemptId)!;
    expect(first.status).toBe('failed');
    expect(first.assets.find((asset) => asset.key === 'orders')).toMatchObject({ status: 'failed', materialization_id: id });
    expect(first.assets.find((asset) => asset.key === 'totals')).toMatchObject({ status: 'skipped', materialization_id: null });
    await owner.api.post(`/runs/${held.runId}/cancel`, {});
    // Not left as orders' latest materialization, which the last test of this block reads.
    const mongo = await MongoClient.connect(stack.mongoUrl);
    try {
      await mongo.db(stack.databases['deployment-service']).collection<{ _id: string }>('materializations').deleteOne({ _id: id });
    } finally {
      await mongo.close();
    }
  });

  it("stores no log line past the attempt's limit, whatever a worker sends", async () => {
    const call = callsAbout(mine, bundleRef).logs;
    // The test stack keeps the default limit, 10,000 lines: seq 10,000 is the cut marker's, past it nothing.
    const past = await send(ownerPool, { ...call, json: { lines: [10_000, 10_001, 50_000].map((seq) => ({ seq, at: new Date().toISOString(), asset: 'orders', message: 'flood' })) } });
    expect([past.status, past.body.data]).toEqual([200, { stored: 1 }]);
    const logs = (await readers[1]!.get(`/runs/${mine.runId}/logs`)).body.data as { message: string }[];
    expect(logs.filter((line) => line.message === 'flood')).toHaveLength(1);
    // Taken back out, so that the other tests find the log as they left it.
    const mongo = await MongoClient.connect(stack.mongoUrl);
    try {
      await mongo.db(stack.databases['placement-service']).collection('attempt_logs').deleteMany({ attempt_id: mine.attemptId, message: 'flood' });
    } finally {
      await mongo.close();
    }
  });

  it("stores no log characters past the attempt's limit and one line's room for the cut marker, whatever a worker sends", async () => {
    const call = callsAbout(mine, bundleRef).logs;
    // The test stack keeps the default limit, 10 MiB of messages; one line more (16,384) is the marker's room.
    const room = 10 * 1024 * 1024 + 16_384;
    const mongo = await MongoClient.connect(stack.mongoUrl);
    const database = mongo.db(stack.databases['placement-service']);
    const counted = (await database.collection('attempts').findOne({ _id: mine.attemptId as never }))?.['log_chars'] as number | undefined;
    const line = (seq: number, message: string) => ({ seq, at: new Date().toISOString(), asset: 'orders', message });
    try {
      // As if the attempt had stored all but 60 characters of its room (sending 10 MiB through the gateway would take 170 calls).
      await database.collection('attempts').updateOne({ _id: mine.attemptId as never }, { $set: { log_chars: room - 60 } });
      const first = await send(ownerPool, { ...call, json: { lines: [line(9_000, 'x'.repeat(40)), line(9_001, 'y'.repeat(40)), line(9_002, 'z')] } });
      // The first fits; the second does not, and nothing after it is stored (the log stays in order).
      expect([first.status, first.body.data]).toEqual([200, { stored: 1 }]);
      const second = await send(ownerPool, { ...call, json: { lines: [line(9_003, 'w'.repeat(20))] } });
      expect([second.status, second.body.data]).toEqual([200, { stored: 1 }]);
      const third = await send(ownerPool, { ...call, json: { lines: [line(9_004, 'v')] } });
      expect([third.status, third.body.data]).toEqual([200, { stored: 0 }]);
      const logs = (await readers[1]!.get(`/runs/${mine.runId}/logs`)).body.data as { message: string }[];
      expect(logs.map((stored) => stored.message).filter((message) => /^(x+|y+|z|w+|v)$/.test(message))).toEqual(['x'.repeat(40), 'w'.repeat(20)]);
    } finally {
      // Taken back out, so that the other tests find the log as they left it.
      await database.collection('attempt_logs').deleteMany({ attempt_id: mine.attemptId, message: { $regex: '^(x+|y+|z|w+|v)$' } });
      await database.collection('attempts').updateOne({ _id: mine.attemptId as never }, { $set: { log_chars: counted ?? 0 } });
      await mongo.close();
    }
  });

  it('hands ctx.read no location outside the storage prefix, even one already recorded', async () => {
    // Recorded behind the API's back (the API itself refuses such a location): a record made
    // before the location check, or by a bug, must still not open a file of the engine host.
    const mongo = await MongoClient.connect(stack.mongoUrl);
    const records = mongo.db(stack.databases['deployment-service']).collection('materializations');
    const id = newId('mat');
    try {
      const environmentId = before.run.environment_id;
      await records.insertOne({
        _id: id as never,
        tenant_id: owner.tenantId,
        environment_id: environmentId,
        asset_key: 'orders',
        columns: [],
        row_count: 1,
        location: 'file:///etc/passwd',
        bytes: 1,
        run_id: null,
        attempt_id: null,
        status: 'latest',
        quarantine: null,
        inserted_at: new Date(),
      });
      const read = await send(ownerPool, callsAbout(mine, bundleRef).upstream);
      expect(outcome(read)).toEqual([422, 'invalid_request']);
      expect(ErrorBody.parse(read.body).error.message).toMatch(/not under the environment's storage prefix/);
    } finally {
      await records.deleteOne({ _id: id as never });
      await mongo.close();
    }
  });

  it("starts no attempt of the other kind: a pool token gets 404 on a local attempt, the engine's runner on a remote one", async () => {
    // A remote attempt (no pool worker runs for the owner): the engine's runner, which calls the
    // placement-service directly with the internal credential, may not start it.
    const remote = Run.parse((await owner.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data);
    const asEngine = await fetch(`${stack.urls['placement-service']}/api/v1/worker/attempts/${remote.attempts[0]!.id}/start`, {
      method: 'POST',
      headers: { [INTERNAL_HEADERS.credential]: stack.internalCredential, [INTERNAL_HEADERS.tenantId]: owner.tenantId, 'content-type': 'application/json' },
      body: JSON.stringify({ worker: { ...WORKER, id: 'engine-runner-1', executor: 'local' } }),
    });
    expect([asEngine.status, ((await asEngine.json()) as { error: { code: string } }).error.code]).toEqual([404, 'not_found']);
    expect(Run.parse((await owner.api.get(`/runs/${remote.id}`)).body.data).attempts[0]!.status).toBe('queued');
    await owner.api.post(`/runs/${remote.id}/cancel`, {});

    // A local attempt: the pool's token may not start it, whether or not the engine's runner took it first.
    expect((await owner.api.post('/environments/prod/placement', { executor: 'local' })).status).toBe(200);
    try {
      // An asset that records nothing, so the owner's materializations stay as the control below expects.
      const local = Run.parse((await owner.api.post('/environments/prod/runs', { assets: ['thrower'] })).body.data);
      expect(local.attempts[0]!.executor).toBe('local');
      const asPool = await ownerPool.post(`/worker/attempts/${local.attempts[0]!.id}/start`, { worker: WORKER });
      expect(outcome(asPool)).toEqual([404, 'not_found']);
      const ran = await until(() => owner.api.get(`/runs/${local.id}`), (r) => ['succeeded', 'failed'].includes(r.body?.data?.status), 30_000, 100);
      expect(Run.parse(ran.body.data).attempts[0]!.worker).not.toBe(WORKER.name);
    } finally {
      expect((await owner.api.post('/environments/prod/placement', { executor: 'remote' })).status).toBe(200);
    }
  });

  // The control: the calls the tests above refused, unchanged and from the attempt's own
  // pool, succeed and change what those tests found unchanged.
  it("takes the same calls from the attempt's own pool", async () => {
    const calls = callsAbout(mine, bundleRef);
    const heartbeat = await send(ownerPool, calls.heartbeat);
    expect([heartbeat.status, heartbeat.body.data]).toEqual([200, { superseded: [] }]);
    const logs = await send(ownerPool, calls.logs);
    expect([logs.status, logs.body.data]).toEqual([200, { stored: 1 }]);
    const connection = await send(ownerPool, calls.connection);
    expect([connection.status, connection.body.data.name]).toEqual([200, 'warehouse']);
    const materialization = await send(ownerPool, calls.materialization);
    expect([materialization.status, materialization.body.data.id]).toEqual([201, materializationId]);
    const upstream = await send(ownerPool, calls.upstream);
    expect([upstream.status, upstream.body.data.materialization_id]).toEqual([200, materializationId]);
    const bundle = await send(ownerPool, calls.bundle);
    expect([bundle.status, bundle.headers.get('content-type')]).toEqual([200, 'application/gzip']);
    const release = await send(ownerPool, calls.release);
    expect([release.status, release.body.data.status]).toEqual([200, 'queued']);
    // Released, the attempt is queued again: started anew it has a new lease to finish under.
    const finish = await send(ownerPool, { ...calls.finish, lease: await start(mine.attemptId) });
    expect([finish.status, finish.body.data.status]).toEqual([200, 'succeeded']);

    const after = await stateOf(mine);
    expect(after.run.status).toBe('succeeded');
    expect(after.logs).toEqual([expect.objectContaining({ message: LOG_MESSAGE })]);
    expect(after.assets).toContainEqual(expect.objectContaining({ key: 'orders', latest_materialization: expect.objectContaining({ id: materializationId }) }));
  });
});

// Apart from the file's main block: these tests hold attempts without heartbeats for longer
// than a lease, which would let the reaper take that block's attempts too.
describe('one terminal state under a second delivery and under the lease reaper', () => {
  let owner: TestTenant;
  let ownerPool: ApiClient;
  let reader: ApiClient;
  let bundleRef: string;

  async function hold(): Promise<Held> {
    const run = Run.parse((await owner.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data);
    const attemptId = run.attempts[0]!.id;
    const started = await ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: WORKER });
    expect(started.status).toBe(200);
    return { runId: run.id, attemptId, lease: AttemptStarted.parse(started.body.data).lease };
  }

  beforeAll(async () => {
    owner = await createTenant(stack, 'worker-api-races');
    reader = await anotherTokenOf(stack, owner);
    bundleRef = await deployRunsProject(owner, join(stack.dataDir, 'lake', owner.tenantId), 'remote');
    ownerPool = owner.api.withToken((await issueCredential(owner)).token);
  });

  it('runs a job delivered twice once: a second start of the same attempt, at once or later, is refused and the first lease holds', async () => {
    const run = Run.parse((await owner.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data);
    const attemptId = run.attempts[0]!.id;
    const second = { ...WORKER, id: 'owner-worker-2', name: 'second-taker' };
    // Two workers given the same job (a stalled BullMQ job handed to a second worker) start it at once.
    const [a, b] = await Promise.all([
      ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: WORKER }),
      ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: second }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const winner = a.status === 200 ? a : b;
    const loser = a.status === 200 ? b : a;
    expect(loser.body.error.code).toBe('lease_superseded');
    const { lease } = AttemptStarted.parse(winner.body.data);
    // A third delivery later changes nothing either.
    const late = await ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: second });
    expect([late.status, late.body.error.code]).toEqual([409, 'lease_superseded']);
    const held = { runId: run.id, attemptId, lease };
    expect((await send(ownerPool, callsAbout(held, bundleRef).finish)).status).toBe(200);
    const finished = Run.parse((await reader.get(`/runs/${run.id}`)).body.data);
    expect([finished.status, finished.attempts.length, finished.attempts[0]!.worker]).toEqual(['succeeded', 1, (winner === a ? WORKER : second).name]);
  });


  it('lists every attempt a worker has started in the pool view, beside those it already held, until it finishes them', async () => {
    const first = await hold();
    const second = await hold();
    const runningOf = async () => PoolStatus.parse((await reader.get('/pool')).body.data).workers.find((worker) => worker.name === WORKER.name)?.running ?? [];
    // No heartbeat in between: the second start adds to what the first recorded.
    expect(await runningOf()).toEqual(expect.arrayContaining([first.attemptId, second.attemptId]));
    for (const held of [first, second]) expect((await send(ownerPool, callsAbout(held, bundleRef).finish)).status).toBe(200);
    // The worker's next heartbeat says what it still holds.
    expect((await ownerPool.post('/worker/heartbeat', { worker: WORKER, attempts: [] })).status).toBe(200);
    expect(await runningOf()).toEqual([]);
  });

  it('gives a start retried with its key the same lease (its answer was lost), and refuses the same key from another worker and another key from the same one', async () => {
    const run = Run.parse((await owner.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data);
    const attemptId = run.attempts[0]!.id;
    const startKey = 'delivery-key-0123456789';
    const first = await ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: WORKER, start_key: startKey });
    expect(first.status).toBe(200);
    const { lease } = AttemptStarted.parse(first.body.data);
    // The retry of that very start: the same lease and plan, nothing started twice.
    const retried = await ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: WORKER, start_key: startKey });
    expect(retried.status).toBe(200);
    expect(AttemptStarted.parse(retried.body.data)).toEqual(AttemptStarted.parse(first.body.data));
    // A second delivery (another key), another worker with the key, a start with no key: refused.
    const refused = await Promise.all([
      ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: WORKER, start_key: 'another-delivery-key-01' }),
      ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: { ...WORKER, id: 'owner-worker-3', name: 'third' }, start_key: startKey }),
      ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: WORKER }),
    ]);
    expect(refused.map((answer) => [answer.status, answer.body.error.code])).toEqual(Array(3).fill([409, 'lease_superseded']));
    // Another tenant's pool with the key learns nothing of it.
    const intruder = await createTenant(stack, 'worker-api-start-intruder');
    const intruderPool = intruder.api.withToken((await issueCredential(intruder)).token);
    expect((await intruderPool.post(`/worker/attempts/${attemptId}/start`, { worker: WORKER, start_key: startKey })).status).toBe(404);
    const held = { runId: run.id, attemptId, lease };
    expect((await send(ownerPool, callsAbout(held, bundleRef).finish)).status).toBe(200);
    // Once finished, the key starts nothing again.
    expect((await ownerPool.post(`/worker/attempts/${attemptId}/start`, { worker: WORKER, start_key: startKey })).status).toBe(409);
    const finished = Run.parse((await reader.get(`/runs/${run.id}`)).body.data);
    expect([finished.status, finished.attempts.length]).toEqual(['succeeded', 1]);
  });

  it("ends an attempt exactly once when its finish races the lease reaper: finished, or lost with the finish refused, and the run agrees", async () => {
    const mongo = await MongoClient.connect(stack.mongoUrl);
    const winners = { finish: 0, reaper: 0 };
    try {
      const attempts = mongo.db(stack.databases['placement-service']).collection<{ _id: string; last_heartbeat_at: Date }>('attempts');
      // The reaper sweeps every third of the lease TTL (RUN_TEST_SETTINGS: 4 s, so about 1.3 s).
      const sweepMs = Number(RUN_TEST_SETTINGS.ATTEMPT_LEASE_TTL_MS) / 3;
      for (let round = 0; round < 12; round += 1) {
        const held = await hold();
        // The barrier: from this write on, the reaper's next sweep takes the attempt as lost;
        // the finish goes out at a point spread over one sweep interval, so each round lands
        // on either side of that sweep, or on it.
        await attempts.updateOne({ _id: held.attemptId }, { $set: { last_heartbeat_at: new Date(0) } });
        await new Promise((resolve) => setTimeout(resolve, Math.round((round / 11) * sweepMs)));
        const finished = await send(ownerPool, callsAbout(held, bundleRef).finish);
        // The attempt is terminal either way now, or will be at the next sweep: wait for evidence.
        const run = Run.parse(
          (await until(() => reader.get(`/runs/${held.runId}`), (r) => ['succeeded', 'failed'].includes(r.body.data.status), 10_000)).body.data,
        );
        const answers = `round ${round}: finish ${JSON.stringify(outcome(finished))}, run ${run.status}, attempts ${run.attempts.map((attempt) => attempt.status)}`;
        if (finished.status === 200) {
          winners.finish += 1;
          expect([run.status, run.attempts.map((attempt) => attempt.status)], answers).toEqual(['succeeded', ['succeeded']]);
        } else {
          winners.reaper += 1;
          expect(outcome(finished), answers).toEqual([409, 'lease_superseded']);
          expect([run.status, run.attempts.map((attempt) => attempt.status)], answers).toEqual(['failed', ['lost']]);
          expect(run.attempts[0]!.error, answers).toMatch(/stopped reporting/);
        }
      }
      console.log(`finish racing the reaper, winners: ${JSON.stringify(winners)}`);
    } finally {
      await mongo.close();
    }
  });
});
