import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ATTEMPT_LEASE_HEADER, AttemptStarted, PoolCredentialIssued, PublicApi, Run, type EventType } from '@envengine/contracts';
import { newId } from '@envengine/resource-ids';
import { anotherTokenOf, createTenant, makeBundle, until, type ApiClient, type ApiResponse, type TestTenant } from '@envengine/test-harness';
import { readEventPages } from './events-fixtures.ts';
import { ASSET_CODE, runsManifest, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');

/**
 * What each operation of the public API records, by its own request id: a change records
 * its event(s), a read or a worker's report of progress none. Typed over `PublicApi`, so an
 * operation added without its row here does not compile.
 */
const EVENTS_OF: { readonly [K in keyof typeof PublicApi]: readonly EventType[] } = {
  listEnvironments: [],
  createEnvironment: ['environment.created'],
  getEnvironment: [],
  updateEnvironment: ['environment.updated'],
  deleteEnvironment: ['environment.deleted'],
  setPlacementForAll: ['placement.changed'],
  setPlacement: ['placement.changed'],
  getQuotas: [],
  createRun: ['run.queued'],
  listRuns: [],
  getRun: [],
  getRunLogs: [],
  cancelRun: ['run.canceled'],
  listSchedules: [],
  nextScheduleFireTimes: [],
  pauseSchedules: ['schedules.paused'],
  resumeSchedules: ['schedules.resumed'],
  getPool: [],
  createPoolCredential: ['pool_credential.created'],
  revokePoolCredential: ['pool_credential.revoked'],
  listEvents: [],
  createWebhook: ['webhook.created'],
  listWebhooks: [],
  createToken: ['token.created'],
  listTokens: [],
  revokeToken: ['token.revoked'],
  getWebhook: [],
  updateWebhook: ['webhook.updated'],
  deleteWebhook: ['webhook.deleted'],
  rotateWebhookSecret: ['webhook.secret_rotated'],
  testWebhook: ['webhook.test'],
  listWebhookDeliveries: [],
  workerHeartbeat: [],
  startAttempt: ['run.started'],
  appendAttemptLogs: [],
  attemptUpstream: [],
  attemptConnection: [],
  attemptStorage: [],
  // A materialization recorded is the run's progress; the run's end is the event.
  recordMaterialization: [],
  finishAttempt: ['run.succeeded'],
  // Handed back by a draining worker: queued again, the run goes on.
  releaseAttempt: [],
  downloadBundle: [],
  // Content-addressed: the same bytes are the same bundle; the deployment that names it is the event.
  uploadBundle: [],
  bundleExists: [],
  createDeployment: ['deployment.ready', 'deployment.activated'],
  listDeployments: [],
  getDeployment: [],
  activateDeployment: ['deployment.activated'],
  promoteDeployment: ['deployment.ready', 'deployment.activated'],
  diffDeployment: [],
  listAssets: [],
  listMaterializations: [],
  downloadMaterialization: [],
  previewMaterialization: [],
  listSecrets: [],
  putSecret: ['secret.created'],
  deleteSecret: ['secret.deleted'],
  listBindings: [],
  putBinding: ['binding.set'],
  deleteBinding: ['binding.deleted'],
};

type Operation = keyof typeof PublicApi;

describe('events by operation: every operation of the public API, driven once through the gateway', () => {
  let tenant: TestTenant;
  let reader: ApiClient;
  let lake: string;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'events-table');
    reader = await anotherTokenOf(stack, tenant);
    lake = join(stack.dataDir, 'lake', tenant.tenantId, 'table');
  });

  it('records exactly the events of its row, under its request id and its caller, for each one', async () => {
    const api = tenant.api;
    const driven: Array<{ operation: Operation; response: ApiResponse; actor: string }> = [];
    const drive = async <T,>(operation: Operation, call: Promise<ApiResponse<T>>, actor = tenant.tokenId): Promise<ApiResponse<T>> => {
      const response = await call;
      expect(response.status, `${operation}: ${response.text}`).toBeLessThan(300);
      driven.push({ operation, response, actor });
      return response;
    };

    await drive('createEnvironment', api.post('/environments', { name: 'tbl', storage_prefix: `file://${lake}`, executor: 'local' }));
    await drive('listEnvironments', api.get('/environments'));
    await drive('getEnvironment', api.get('/environments/tbl'));
    await drive('updateEnvironment', api.patch('/environments/tbl', { max_concurrent_runs: 5 }));
    await drive('putSecret', api.put('/environments/tbl/secrets/pw', { value: 'table-secret' }));
    await drive('listSecrets', api.get('/environments/tbl/secrets'));
    await drive('putBinding', api.put('/environments/tbl/bindings/warehouse', {}));
    // Setup beside the table's calls: each is checked too, below, with the rest.
    const setup: ApiResponse[] = [];
    setup.push(await api.put('/environments/tbl/bindings/gate', { config: { open: true } }));
    setup.push(await api.put('/environments/tbl/bindings/extra', { secret_refs: { password: 'pw' } }));
    await drive('listBindings', api.get('/environments/tbl/bindings'));
    const bundle = await makeBundle(ASSET_CODE);
    const uploaded = await drive('uploadBundle', api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } }));
    const bundleRef = uploaded.body.data.bundle_ref as string;
    await drive('bundleExists', api.request('HEAD', `/bundles/${bundleRef}`));
    const manifest = { ...runsManifest(), schedules: [{ name: 'nightly', job: 'all', cron: '0 2 * * *', timezone: 'UTC' }] };
    const first = await drive('createDeployment', api.post('/environments/tbl/deployments', { manifest, bundle_ref: bundleRef }));
    await drive('listDeployments', api.get('/environments/tbl/deployments'));
    await drive('getDeployment', api.get(`/deployments/${first.body.data.id}`));
    await drive('listAssets', api.get('/environments/tbl/assets'));
    await drive('listSchedules', api.get('/environments/tbl/schedules'));
    await drive('nextScheduleFireTimes', api.get('/environments/tbl/schedules/nightly/next?count=2'));

    // A run on the engine's runner: its start and end are the engine's, not this request's.
    const localRun = Run.parse((await drive('createRun', api.post('/environments/tbl/runs', { job: 'all' }))).body.data);
    expect((await waitForRun(tenant, localRun.id)).status).toBe('succeeded');
    await drive('listRuns', api.get('/environments/tbl/runs'));
    await drive('getRun', api.get(`/runs/${localRun.id}`));
    await drive('getRunLogs', api.get(`/runs/${localRun.id}/logs`));
    const [orders] = (await drive('listMaterializations', api.get('/environments/tbl/assets/orders/materializations'))).body.data as Array<{ id: string }>;
    await drive('downloadMaterialization', api.get(`/environments/tbl/assets/orders/materializations/${orders!.id}/data`));
    await drive('previewMaterialization', api.get(`/environments/tbl/assets/orders/materializations/${orders!.id}/preview`));

    const second = await api.post('/environments/tbl/deployments', { manifest, bundle_ref: bundleRef, activate: false });
    setup.push(second);
    await drive('activateDeployment', api.post(`/deployments/${second.body.data.id}/activate`, {}));
    const promoted = await drive('promoteDeployment', api.post(`/deployments/${first.body.data.id}/promote`, { environment: 'tbl' }));
    await drive('diffDeployment', api.get(`/deployments/${promoted.body.data.id}/diff`));
    await drive('pauseSchedules', api.post('/environments/tbl/schedules/pause', { reason: 'the table' }));
    await drive('resumeSchedules', api.post('/environments/tbl/schedules/resume'));

    // A pool worker's part, by hand with a pool token.
    await drive('setPlacement', api.post('/environments/tbl/placement', { executor: 'remote' }));
    const credential = PoolCredentialIssued.parse((await drive('createPoolCredential', api.post('/pool/credentials', { label: 'table' }))).body.data);
    await drive('getPool', api.get('/pool'));
    const pool = api.withToken(credential.token);
    const worker = `worker:${credential.id}`;
    const remoteRun = Run.parse((await api.post('/environments/tbl/runs', { assets: ['totals'] })).body.data);
    const attemptId = remoteRun.attempts[0]!.id;
    const identity = { id: 'table-worker-1', name: 'table-worker', executor: 'remote', concurrency: 1, sandbox: 'bwrap' } as const;
    await drive('workerHeartbeat', pool.post('/worker/heartbeat', { worker: identity, attempts: [] }), worker);
    const started = AttemptStarted.parse((await drive('startAttempt', pool.post(`/worker/attempts/${attemptId}/start`, { worker: identity }), worker)).body.data);
    const lease = { headers: { [ATTEMPT_LEASE_HEADER]: started.lease } };
    await drive('appendAttemptLogs', pool.post(`/worker/attempts/${attemptId}/logs`, { lines: [{ seq: 0, at: new Date().toISOString(), asset: 'totals', message: 'table' }] }, lease), worker);
    await drive('attemptUpstream', pool.get(`/worker/attempts/${attemptId}/upstreams/orders?asset=totals`, lease), worker);
    await drive('attemptConnection', pool.post(`/worker/attempts/${attemptId}/connections/warehouse`, { asset: 'totals' }, lease), worker);
    await drive('attemptStorage', pool.post(`/worker/attempts/${attemptId}/storage`, { asset: 'totals' }, lease), worker);
    await drive('downloadBundle', pool.get(`/worker/bundles/${bundleRef}`), worker);
    await drive('releaseAttempt', pool.post(`/worker/attempts/${attemptId}/release`, { reason: 'the table' }, lease), worker);
    const again = await pool.post(`/worker/attempts/${attemptId}/start`, { worker: identity });
    setup.push(again);
    const relapse = { headers: { [ATTEMPT_LEASE_HEADER]: AttemptStarted.parse(again.body.data).lease } };
    const materialization = newId('mat');
    await drive(
      'recordMaterialization',
      pool.post(
        `/worker/attempts/${attemptId}/assets/totals/materializations`,
        { id: materialization, location: `file://${lake}/totals/${materialization}.parquet`, bytes: 100, row_count: 1, columns: [{ name: 'orders', type: 'integer', nullable: false }, { name: 'total', type: 'number', nullable: false }] },
        relapse,
      ),
      worker,
    );
    await drive('finishAttempt', pool.post(`/worker/attempts/${attemptId}/finish`, { status: 'succeeded', error: null, assets: [{ key: 'totals', status: 'succeeded', error: null }] }, relapse), worker);

    const queued = Run.parse((await api.post('/environments/tbl/runs', { assets: ['orders'] })).body.data);
    await drive('cancelRun', api.post(`/runs/${queued.id}/cancel`));
    await drive('revokePoolCredential', api.delete(`/pool/credentials/${credential.id}`));
    await drive('setPlacementForAll', api.post('/placement', { executor: 'local' }));
    await drive('deleteBinding', api.delete('/environments/tbl/bindings/extra'));
    await drive('deleteSecret', api.delete('/environments/tbl/secrets/pw'));
    await drive('getQuotas', api.get('/quotas'));
    await drive('listEvents', api.get('/events?limit=1'));
    // Nothing listens on the discard port: its deliveries fail, which is no event of a request.
    const webhook = (await drive('createWebhook', api.post('/webhooks', { url: 'http://127.0.0.1:9/table', events: ['run.*'] }))).body.data as { id: string };
    await drive('listWebhooks', api.get('/webhooks'));
    await drive('getWebhook', api.get(`/webhooks/${webhook.id}`));
    await drive('updateWebhook', api.patch(`/webhooks/${webhook.id}`, { events: ['run.failed'] }));
    await drive('rotateWebhookSecret', api.post(`/webhooks/${webhook.id}/secret/rotate`));
    await drive('testWebhook', api.post(`/webhooks/${webhook.id}/test`));
    await drive('listWebhookDeliveries', api.get(`/webhooks/${webhook.id}/deliveries`));
    await drive('deleteWebhook', api.delete(`/webhooks/${webhook.id}`));
    const token = (await drive('createToken', api.post('/tokens', { name: 'table', role: 'viewer' }))).body.data as { id: string };
    await drive('listTokens', api.get('/tokens'));
    await drive('revokeToken', api.delete(`/tokens/${token.id}`));
    const deleted = await drive('deleteEnvironment', api.delete('/environments/tbl?force=true'));

    // Every operation was driven, each once.
    expect(driven.map((entry) => entry.operation).sort()).toEqual((Object.keys(EVENTS_OF) as Operation[]).sort());

    const requestId = (response: ApiResponse) => response.headers.get('x-request-id')!;
    // The last change's event is in once every scope's relay has caught up with what came before it.
    const events = await until(
      async () => (await readEventPages(reader)).events,
      (all) => driven.every(({ operation, response }) => all.filter((event) => event.request_id === requestId(response)).length >= EVENTS_OF[operation].length)
        && all.some((event) => event.request_id === requestId(deleted)),
      30_000,
      100,
    );
    const byRequest = (id: string) => events.filter((event) => event.request_id === id);
    const outcome = driven.map(({ operation, response }) => [operation, byRequest(requestId(response)).map((event) => event.type)]);
    expect(outcome).toEqual(driven.map(({ operation }) => [operation, [...EVENTS_OF[operation]]]));
    for (const { operation, response, actor } of driven) {
      for (const event of byRequest(requestId(response))) expect([operation, event.actor]).toEqual([operation, actor]);
    }
    // The setup calls recorded what their kind records; the second start, none.
    expect(setup.map((response) => byRequest(requestId(response)).map((event) => event.type))).toEqual([['binding.set'], ['binding.set'], ['deployment.ready'], []]);
    // Nothing else names a request of this test: the rest is the engine's own (the runner's, the tear-down's).
    const known = new Set([...driven.map(({ response }) => requestId(response)), ...setup.map(requestId)]);
    const others = events.filter((event) => event.request_id !== null && !known.has(event.request_id) && event.actor !== 'engine');
    expect(others.map((event) => [event.type, event.actor])).toEqual([
      ['run.queued', tenant.tokenId],
      ['run.queued', tenant.tokenId],
    ]);
  });
});
