import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { TEMPORAL_HISTORY_SHARDS, temporalAnswers, type TemporalClusterServer } from '@envengine/backing-servers';
import { createTenant, deployProject, startTestStack, until, workflowsOf, type TestStack, type TestTenant } from '@envengine/test-harness';
import { expectIngestsCompleted } from './ingest-fixtures.ts';
import { ASSET_CODE, RUN_TEST_SETTINGS, runsManifest, waitForRun } from './runs-fixtures.ts';

const shared = inject('stack');

/**
 * The cluster profile's Temporal (server 1.29.1 built with Go, on PostgreSQL, a process per
 * service) under the engine: what runs on the dev server runs here, and a history or
 * frontend process that dies under in-flight ingests loses none of them.
 */
describe('the engine on a Temporal cluster on PostgreSQL', () => {
  let stack: TestStack;
  let temporal: TemporalClusterServer;
  let tenant: TestTenant;
  let bundleRef: string;
  const manifest = { ...runsManifest(), schedules: [] };

  beforeAll(async () => {
    // Its own Temporal cluster; MongoDB and Redis are the suite's.
    stack = await startTestStack({ profile: 'cluster', replicas: 1, mongoUrl: shared.mongoUrl, redisUrl: shared.redisUrl, env: RUN_TEST_SETTINGS });
    expect('parts' in stack.servers.temporal, 'the cluster profile runs the Temporal cluster').toBe(true);
    temporal = stack.servers.temporal as TemporalClusterServer;
    tenant = await createTenant(stack.info, 'cluster');
    bundleRef = await deployProject(tenant.api, {
      environment: 'prod',
      storagePrefix: `file://${stack.info.dataDir}/lake/prod`,
      executor: 'local',
      bindings: { warehouse: {}, gate: { config: { open: false } } },
      files: ASSET_CODE,
      manifest,
    });
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const part = (name: string) => {
    const found = temporal.parts.find((candidate) => candidate.name === name);
    if (!found) throw new Error(`no ${name} in the cluster`);
    return found.process;
  };
  const ingest = () => tenant.api.post('/environments/prod/deployments', { manifest, bundle_ref: bundleRef });

  it(`is the server on PostgreSQL with ${TEMPORAL_HISTORY_SHARDS} history shards, a process per service, the search attributes registered`, async () => {
    const connection = await Connection.connect({ address: stack.info.temporalAddress });
    try {
      const info = await connection.workflowService.getClusterInfo({});
      expect(info.historyShardCount).toBe(TEMPORAL_HISTORY_SHARDS);
      expect(info.persistenceStore).toBe('postgres12');
      expect(info.visibilityStore).toBe('postgres12');
      expect(info.serverVersion).toBe('1.29.1');
    } finally {
      await connection.close();
    }
    expect(temporal.parts.map((candidate) => candidate.name)).toEqual(['postgres', 'temporal-frontend', 'temporal-history', 'temporal-matching', 'temporal-worker']);
    expect(new Set(temporal.parts.map((candidate) => candidate.process.pid)).size).toBe(temporal.parts.length);
    // The deployment of beforeAll is listed by its tenant's search attribute (SQL visibility on PostgreSQL).
    const listed = await until(
      () => workflowsOf(stack.info.temporalAddress, `WorkflowType = 'ingestDeployment' AND EnvengineTenantId = '${tenant.tenantId}'`),
      (ids) => ids.length >= 1,
      30_000,
    );
    expect(listed.length).toBeGreaterThanOrEqual(1);
  });

  it('runs a manual run and fires a per-second schedule through the run path', async () => {
    const started = await tenant.api.post('/environments/prod/runs', { job: 'all' });
    expect(started.status, started.text).toBe(201);
    expect(await waitForRun(tenant, started.body.data.id)).toMatchObject({ status: 'succeeded' });
    // Schedules run in the cluster's worker service (Temporal's scheduler workflows).
    const scheduled = await tenant.api.post('/environments/prod/deployments', {
      manifest: { ...manifest, schedules: [{ name: 'every_second', job: 'all', cron: '* * * * * *', timezone: 'UTC' }] },
      bundle_ref: bundleRef,
    });
    expect(scheduled.status, scheduled.text).toBe(201);
    const runs = await until(
      async () => ((await tenant.api.get('/environments/prod/runs?limit=100')).body.data as Array<{ trigger: string; status: string }>) ?? [],
      (list) => list.some((run) => run.trigger === 'schedule' && run.status === 'succeeded'),
      60_000,
    );
    expect(runs.some((run) => run.trigger === 'schedule' && run.status === 'succeeded')).toBe(true);
    const paused = await tenant.api.post('/environments/prod/schedules/pause', { reason: 'test done' });
    expect(paused.status, paused.text).toBe(200);
  });

  for (const service of ['history', 'frontend'] as const) {
    it(`a ${service} process killed with ingests in flight: restarted, every one of them completes, once`, { timeout: 240_000 }, async () => {
      const killed = part(`temporal-${service}`);
      const worker = stack.services.processes['workflow-worker'];
      const before = ((await tenant.api.get('/environments/prod/deployments')).body.data as unknown[]).length;
      const inFlight = 4;
      // The worker frozen, the ingests stay in flight in Temporal until the kill.
      process.kill(worker.pid!, 'SIGSTOP');
      let answers: Array<{ status: number }> = [];
      try {
        const pending = Array.from({ length: inFlight }, () => ingest());
        const running = await until(
          () => workflowsOf(stack.info.temporalAddress, `WorkflowType = 'ingestDeployment' AND ExecutionStatus = 'Running' AND EnvengineTenantId = '${tenant.tenantId}'`),
          (ids) => ids.length === inFlight,
          30_000,
        );
        expect(running).toHaveLength(inFlight);
        const startsBefore = killed.starts;
        process.kill(killed.pid!, 'SIGKILL');
        await killed.waitForExit();
        killed.respawn();
        expect(killed.starts).toBe(startsBefore + 1);
        const back = await until(() => temporalAnswers(stack.info.temporalAddress, 'default').catch(() => false), (answers) => answers, 60_000, 200);
        expect(back, 'the cluster answers again').toBe(true);
        process.kill(worker.pid!, 'SIGCONT');
        answers = await Promise.all(pending);
        await expectIngestsCompleted(tenant, stack.info.temporalAddress, running, worker);
      } finally {
        process.kill(worker.pid!, 'SIGCONT');
      }
      console.info(`ingests in flight across a Temporal ${service} kill answered: ${answers.map((answer) => answer.status).join(', ')}`);
      expect(answers.map((answer) => answer.status).filter((status) => ![201, 202, 503].includes(status))).toEqual([]);
      const after = (await tenant.api.get('/environments/prod/deployments')).body.data as Array<{ status: string }>;
      expect(after.length).toBe(before + inFlight);
      // And the cluster takes new work at once.
      const next = await ingest();
      expect(next.status, next.text).toBe(201);
    });
  }
});
