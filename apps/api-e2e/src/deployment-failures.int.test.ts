import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTemporal, temporalAnswers, type BackingServer } from '@envengine/backing-servers';
import { ErrorBody } from '@envengine/contracts';
import { createTenant, makeBundle, manifestOf, startTestStack, type TestStack, type TestTenant, until, workflowsOf } from '@envengine/test-harness';
import { expectIngestsCompleted } from './ingest-fixtures.ts';

const shared = inject('stack');
/** Ingests refused while Temporal is down: enough for an uncapped reconnect backoff to outgrow a call's deadline. */
const OUTAGE_REQUESTS = 6;


describe('deployments when Temporal or the workflow worker goes away', () => {
  // A stack with a Temporal of its own, so that stopping it disturbs no other test.
  let stack: TestStack;
  let tenant: TestTenant;
  let bundleRef: string;
  let restartedTemporal: BackingServer | undefined;
  const manifest = manifestOf([{ key: 'orders' }]);
  const deployments = async () => (await tenant.api.get('/environments/prod/deployments')).body.data as Array<{ id: string; status: string }>;

  beforeAll(async () => {
    // The embedded Temporal and one workflow-worker whatever the profile: these tests freeze and
    // kill that one worker and the dev server (the cluster's own crash tests: temporal-cluster).
    stack = await startTestStack({ profile: 'embedded', replicas: 1, mongoUrl: shared.mongoUrl, redisUrl: shared.redisUrl });
    tenant = await createTenant(stack.info, 'failures');
    await tenant.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/p', executor: 'local' });
    await tenant.api.put('/environments/prod/bindings/warehouse', {});
    const bundle = await makeBundle({ 'assets/orders.js': 'x' });
    bundleRef = (await tenant.api.request('POST', '/bundles', { raw: bundle, headers: { 'content-type': 'application/gzip' } })).body.data.bundle_ref;
  });

  afterAll(async () => {
    await stack?.stop();
    await restartedTemporal?.stop();
  });

  it('a worker killed mid-ingest: the ingest completes when a worker returns, written once', async () => {
    const worker = stack.services.processes['workflow-worker'];
    const before = (await deployments()).length;
    // Frozen, the worker holds whatever task it is handed; it is killed only once Temporal
    // shows the ingest running, so the kill lands while the ingest is under way.
    process.kill(worker.pid!, 'SIGSTOP');
    const pending = tenant.api.post('/environments/prod/deployments', { manifest, bundle_ref: bundleRef });
    const running = await until(
      () => workflowsOf(stack.info.temporalAddress, "WorkflowType = 'ingestDeployment' AND ExecutionStatus = 'Running'"),
      (ids) => ids.length === 1,
      15_000,
    );
    expect(running).toHaveLength(1);
    process.kill(worker.pid!, 'SIGKILL');
    await worker.waitForExit();
    await stack.services.restart('workflow-worker');

    const response = await pending;
    expect(response.status, response.text).toBe(201);
    expect(response.body.data).toMatchObject({ status: 'ready', active: true });
    expect(running[0]).toBe(`ingest-${response.body.data.id}`);
    const after = await deployments();
    expect(after.length).toBe(before + 1);
    expect(after.filter((row) => row.id === response.body.data.id)).toHaveLength(1);
  });

  it('an ingest that outlives the request answers 202 with its id, and a retry with the same Idempotency-Key starts no second one', async () => {
    // A short wait, so the request's time runs out while the (frozen) worker holds the ingest.
    await stack.services.restart('deployment-service', { WORKFLOW_WAIT_MS: '1500' });
    const worker = stack.services.processes['workflow-worker'];
    const before = (await deployments()).length;
    const key = `slow-${Date.now()}`;
    const ingest = () => tenant.api.post('/environments/prod/deployments', { manifest, bundle_ref: bundleRef }, { headers: { 'Idempotency-Key': key } });
    process.kill(worker.pid!, 'SIGSTOP');
    let id: string | undefined;
    try {
      const first = await ingest();
      expect(first.status, first.text).toBe(202);
      expect(first.body.data).toMatchObject({ status: 'pending', environment_id: expect.stringMatching(/^env_/) });
      id = first.body.data.id;
      expect(id).toMatch(/^dep_/);
      const retry = await ingest();
      expect(retry.status).toBe(202);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body.data.id).toBe(id);
      // Polled as the 202 says: pending while the ingest runs; another tenant finds nothing.
      const polled = await tenant.api.get(`/deployments/${id}`);
      expect([polled.status, polled.body.data]).toEqual([200, { id, environment_id: first.body.data.environment_id, status: 'pending' }]);
      const stranger = await createTenant(stack.info, 'failures-stranger');
      const strangers = await stranger.api.get(`/deployments/${id}`);
      expect([strangers.status, strangers.body.error?.code]).toEqual([404, 'not_found']);
      // A token of the same tenant limited to other environments finds nothing either.
      const minted = await tenant.api.post('/tokens', { name: 'previews only', role: 'viewer', environments: ['pr-*'] });
      expect(minted.status, minted.text).toBe(201);
      const limited = await tenant.api.withToken(minted.body.data.token as string).get(`/deployments/${id}`);
      expect([limited.status, limited.body.error?.code]).toEqual([404, 'not_found']);
      process.kill(worker.pid!, 'SIGCONT');
      const recorded = await until(() => tenant.api.get(`/deployments/${id}`), (response) => response.status === 200 && response.body.data.status !== 'pending', 30_000);
      expect(recorded.body.data).toMatchObject({ id, status: 'ready' });
      expect((await deployments()).length).toBe(before + 1);
    } finally {
      process.kill(worker.pid!, 'SIGCONT');
      // Back to the normal wait, whatever happened above.
      await stack.services.restart('deployment-service');
    }
  });

  it('Temporal killed with ingests in flight: restarted on its data, every one of them completes, once', { timeout: 240_000 }, async () => {
    const temporal = stack.servers.temporal.process!;
    const worker = stack.services.processes['workflow-worker'];
    const before = (await deployments()).length;
    const inFlight = 4;
    // The worker frozen, the ingests stay in flight in Temporal until it is killed.
    process.kill(worker.pid!, 'SIGSTOP');
    let answers: Array<{ status: number }> = [];
    try {
      const pending = Array.from({ length: inFlight }, () => tenant.api.post('/environments/prod/deployments', { manifest, bundle_ref: bundleRef }));
      const running = await until(
        () => workflowsOf(stack.info.temporalAddress, "WorkflowType = 'ingestDeployment' AND ExecutionStatus = 'Running'"),
        (ids) => ids.length === inFlight,
        30_000,
      );
      expect(running).toHaveLength(inFlight);
      // A crash of the whole server (the dev server is frontend and history in one process).
      process.kill(temporal.pid!, 'SIGKILL');
      await temporal.waitForExit();
      temporal.respawn();
      expect(temporal.starts).toBe(2);
      // Back once it answers for the namespace (it listens a moment before it does).
      const back = await until(() => temporalAnswers(stack.servers.temporal.url, 'default').catch(() => false), (answers) => answers, 60_000, 200);
      expect(back, 'the restarted Temporal answers').toBe(true);
      process.kill(worker.pid!, 'SIGCONT');
      answers = await Promise.all(pending);
      // Each ingest Temporal had when it died ran to its end after the restart.
      await expectIngestsCompleted(tenant, stack.info.temporalAddress, running, worker);
    } finally {
      process.kill(worker.pid!, 'SIGCONT');
    }
    // The requests were answered (201 once done, 202 or 503 if their wait ran into the
    // crash), and no ingest was made twice.
    console.info(`ingests in flight across a Temporal crash answered: ${answers.map((answer) => answer.status).join(', ')}`);
    expect(answers.map((answer) => answer.status).filter((status) => ![201, 202, 503].includes(status))).toEqual([]);
    const after = await deployments();
    expect(after.length).toBe(before + inFlight);
    expect(after.slice(0, inFlight).every((row) => row.status === 'ready')).toBe(true);
  });

  it('Temporal unreachable: 503 unavailable, no row, and the next ingest works as soon as Temporal returns', { timeout: 120_000 }, async () => {
    const port = Number(stack.servers.temporal.url.split(':').at(-1));
    const before = await deployments();
    const active = (await tenant.api.get('/environments/prod')).body.data.active_deployment_id;
    await stack.servers.temporal.stop();

    const down = await tenant.api.post('/environments/prod/deployments', { manifest, bundle_ref: bundleRef });
    expect(down.status, down.text).toBe(503);
    expect(ErrorBody.parse(down.body).error.code).toBe('unavailable');
    const activateDown = await tenant.api.post(`/deployments/${before[0]!.id}/activate`, {});
    expect(activateDown.status).toBe(503);
    // A long outage, seen by the service: each ingest it is asked for meanwhile retries
    // until its deadline, and each failed reconnect lengthens its client's next wait.
    for (let refused = 0; refused < OUTAGE_REQUESTS; refused += 1) {
      const again = await tenant.api.post('/environments/prod/deployments', { manifest, bundle_ref: bundleRef });
      expect(again.status, again.text).toBe(503);
    }
    expect(await deployments()).toEqual(before);
    expect((await tenant.api.get('/environments/prod')).body.data.active_deployment_id).toBe(active);

    restartedTemporal = await startTemporal({ dataDir: stack.info.dataDir, port, headless: true, report: () => undefined });
    // Temporal answers again (startTemporal waited for its namespace): the very next ingest
    // goes through. The service's connection retries within its call's deadline, so no
    // backoff left from the outage turns it away.
    const back = await tenant.api.post('/environments/prod/deployments', { manifest, bundle_ref: bundleRef });
    expect(back.status, back.text).toBe(201);
    expect(back.body.data.active).toBe(true);
  });
});
