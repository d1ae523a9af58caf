import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PublicApi, Run } from '@envengine/contracts';
import { routeTemplateOf } from '@envengine/service-metrics';
import { createTenant, startTestStack, until, type TestStack, type TestTenant } from '@envengine/test-harness';
import { deployRunsProject, issueCredential, RUN_TEST_SETTINGS, waitForRun } from './runs-fixtures.ts';

const shared = inject('stack');

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text exposition, parsed: one sample per line that is not a comment. */
function parseExposition(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not an exposition line: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [pair[1]!, pair[2]!]));
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

describe('Prometheus metrics on every service (a stack of its own)', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  const scraped = new Map<string, Sample[]>();

  async function scrape(service: keyof TestStack['services']['urls'] | 'gateway'): Promise<Sample[]> {
    const url = service === 'gateway' ? stack.info.gatewayMetricsUrls[0]! : stack.services.urls[service];
    const response = await fetch(`${url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/plain');
    const samples = parseExposition(await response.text());
    scraped.set(service, samples);
    return samples;
  }

  const value = (samples: Sample[], name: string, labels: Record<string, string>) =>
    samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted)).reduce((sum, sample) => sum + sample.value, 0);

  beforeAll(async () => {
    // One of each whatever the profile: the test reads each count from the one process that made it.
    stack = await startTestStack({ replicas: 1, mongoUrl: shared.mongoUrl, temporalAddress: shared.temporalAddress, env: RUN_TEST_SETTINGS });
    tenant = await createTenant(stack.info, 'metrics');
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("counts the engine's runner as a live worker while it idles, before it has served any tenant", async () => {
    const samples = await until(() => scrape('placement-service'), (scraped) => value(scraped, 'envengine_workers_live', { executor: 'local' }) === 1, 15_000, 100);
    expect(value(samples, 'envengine_workers_live', { executor: 'local' })).toBe(1);
    expect(value(samples, 'envengine_workers_live', { executor: 'remote' })).toBe(0);
    // It reports under the engine's own tenant id: no tenant's pool view lists it.
    expect((await tenant.api.get('/pool')).body.data.workers).toEqual([]);
  });

  it('counts one ingest and activation, a run that succeeds, one that fails and one lost attempt, with no id in any label', async () => {
    // One ingest that activates (deployRunsProject deploys once).
    await deployRunsProject(tenant, join(stack.info.dataDir, 'lake', 'metrics'), 'local');
    const succeeded = await waitForRun(tenant, Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data).id);
    const failed = await waitForRun(tenant, Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['thrower'] })).body.data).id);
    expect([succeeded.status, failed.status]).toEqual(['succeeded', 'failed']);

    // A lost attempt: a pool's worker starts it and is never heard from again.
    expect((await tenant.api.post('/environments/prod/placement', { executor: 'remote' })).status).toBe(200);
    const pool = tenant.api.withToken((await issueCredential(tenant)).token);
    const abandoned = Run.parse((await tenant.api.post('/environments/prod/runs', { assets: ['orders'] })).body.data);
    const started = await pool.post(`/worker/attempts/${abandoned.attempts[0]!.id}/start`, { worker: { id: 'silent-1', name: 'silent', executor: 'remote', concurrency: 1, sandbox: 'bwrap' } });
    expect(started.status).toBe(200);
    // Its start reported it: one live remote worker, until its lease runs out.
    expect(value(await scrape('placement-service'), 'envengine_workers_live', { executor: 'remote' })).toBe(1);
    const lost = await waitForRun(tenant, abandoned.id, 30_000);
    expect([lost.status, lost.attempts[0]!.status]).toEqual(['failed', 'lost']);

    // A counter moves just after the transition it counts is stored: wait for the evidence.
    const placement = await until(
      () => scrape('placement-service'),
      (samples) => value(samples, 'envengine_runs_finished_total', { trigger: 'manual' }) === 3 && value(samples, 'envengine_attempts_lost_total', {}) === 1,
      10_000,
      100,
    );
    expect(value(placement, 'envengine_runs_started_total', { trigger: 'manual' })).toBe(3);
    expect(value(placement, 'envengine_runs_finished_total', { trigger: 'manual', outcome: 'succeeded' })).toBe(1);
    expect(value(placement, 'envengine_runs_finished_total', { trigger: 'manual', outcome: 'failed' })).toBe(2);
    expect(value(placement, 'envengine_runs_finished_total', { trigger: 'schedule', outcome: 'canceled' })).toBe(0);
    expect(value(placement, 'envengine_attempts_lost_total', { executor: 'remote' })).toBe(1);
    expect(value(placement, 'envengine_attempts_retried_total', {})).toBe(0);
    expect(value(placement, 'envengine_attempt_dispatch_to_running_seconds_count', { executor: 'local' })).toBe(2);
    expect(value(placement, 'envengine_attempt_dispatch_to_running_seconds_count', { executor: 'remote' })).toBe(1);
    expect(value(placement, 'envengine_schedule_ticks_total', { outcome: 'run_created' })).toBe(0);
    for (const outcome of ['late', 'skipped_overlap', 'skipped_paused', 'skipped_quota', 'missed']) {
      expect(placement.some((sample) => sample.name === 'envengine_schedule_ticks_total' && sample.labels['outcome'] === outcome), outcome).toBe(true);
    }
    expect(value(placement, 'envengine_attempts_queued', { queue: 'local' })).toBe(0);
    // The runner served a tenant and idles under its own id too: one runner, counted once.
    expect(value(placement, 'envengine_workers_live', { executor: 'local' })).toBe(1);
    // The silent worker is no longer counted once its lease has run out.
    expect(value(placement, 'envengine_workers_live', { executor: 'remote' })).toBe(0);

    const deployment = await scrape('deployment-service');
    expect(value(deployment, 'envengine_ingest_duration_seconds_count', { outcome: 'ready' })).toBe(1);
    expect(value(deployment, 'envengine_ingest_duration_seconds_count', { outcome: 'failed' })).toBe(0);
    const workflows = await scrape('workflow-worker');
    expect(value(workflows, 'envengine_activation_duration_seconds_count', { outcome: 'activated' })).toBe(1);
    const runner = await until(() => scrape('attempt-worker'), (samples) => value(samples, 'envengine_worker_attempts_total', {}) === 2, 10_000, 100);
    expect(value(runner, 'envengine_worker_attempts_total', { result: 'succeeded' })).toBe(1);
    expect(value(runner, 'envengine_worker_attempts_total', { result: 'failed' })).toBe(1);

    const gateway = await scrape('gateway');
    expect(value(gateway, 'envengine_http_request_duration_seconds_count', { route: '/api/v1/environments/:param/runs', method: 'POST', status: '201' })).toBe(3);
    expect(value(gateway, 'envengine_http_request_duration_seconds_count', { route: '/api/v1/worker/attempts/:param/start', method: 'POST', status: '200' })).toBe(1);
    // The services label by the route that matched.
    expect(value(placement, 'envengine_http_request_duration_seconds_count', { route: '/api/v1/environments/:param/runs', method: 'POST', status: '201' })).toBe(3);
    await scrape('secrets-service');

    // No label of any series carries an id, the tenant, the environment's name or a token.
    const forbidden = [tenant.tenantId, tenant.token, 'prod', succeeded.id, failed.id, abandoned.id, abandoned.attempts[0]!.id, succeeded.environment_id, succeeded.deployment_id];
    const idPattern = /\b[a-z]{3}_[0-9a-z]{26}\b/;
    for (const [service, samples] of scraped) {
      for (const sample of samples) {
        for (const labelValue of Object.values(sample.labels)) {
          expect(idPattern.test(labelValue), `${service} ${sample.name} ${labelValue}`).toBe(false);
          for (const value of forbidden) expect(labelValue.includes(value), `${service} ${sample.name} ${labelValue}`).toBe(false);
        }
      }
    }
    // Positive control: the scan sees an id where one is.
    expect(idPattern.test(`route="${succeeded.id}"`)).toBe(true);
  });

  it("times a request under its operation's template, never the path a caller sent, and 1,000 made-up paths add no series", async () => {
    const secretName = 'caller-chosen-name-1234';
    expect((await tenant.api.get(`/environments/${secretName}`)).status).toBe(404);
    expect((await fetch(`${stack.info.gatewayUrl}/no/such/${secretName}`)).status).toBe(404);
    await until(() => scrape('gateway'), (samples) => samples.some((sample) => sample.labels['status'] === '404' && sample.labels['route'] === 'unmatched'), 5_000, 100);
    const text = await (await fetch(`${stack.info.gatewayMetricsUrls[0]}/metrics`)).text();
    expect(text).not.toContain(secretName);
    // Positive control: a matched operation keeps its template.
    expect(text).toContain('route="/api/v1/environments/:param"');
    const seriesOf = (exposition: string) =>
      new Set(exposition.split('\n').filter((line) => line.startsWith('envengine_http_request_duration_seconds_count')).map((line) => line.slice(0, line.lastIndexOf(' '))));
    const seriesBefore = seriesOf(text);
    // Tokenless and with tokens, made-up paths of every shape (a route label per shape grew /metrics from 690 KB to 1.52 MB).
    const words = ['environments', 'runs', 'logs', 'cancel', 'worker', 'x'];
    const madeUp = Array.from({ length: 1000 }, (_, index) => `/api/v1/${Array.from({ length: 1 + (index % 9) }, (_, depth) => words[(index * 7 + depth * 3) % words.length]).join('/')}/${index}`);
    for (let start = 0; start < madeUp.length; start += 50) {
      await Promise.all(madeUp.slice(start, start + 50).map((path, index) => fetch(`${stack.info.gatewayUrl}${path}`, index % 2 === 0 ? {} : { headers: { authorization: `Bearer ${tenant.token}` } }).then((response) => response.arrayBuffer())));
    }
    const added = [...seriesOf(await (await fetch(`${stack.info.gatewayMetricsUrls[0]}/metrics`)).text())].filter((series) => !seriesBefore.has(series));
    // One series per status those paths were answered with (401, 404, 429…), under `unmatched` or, for a path that
    // is an operation's (`/api/v1/environments/7`), under its template: none per path.
    console.log(`1,000 made-up paths added ${added.length} series: ${added.join(' ')}`);
    expect(added.length).toBeLessThanOrEqual(6);
    const operations = new Set(Object.values(PublicApi).map((endpoint) => routeTemplateOf(`/api/v1${endpoint.path}`)));
    expect(added.filter((series) => !(series.includes('route="unmatched"') || operations.has(/route="([^"]*)"/.exec(series)![1]!)))).toEqual([]);
  });

  it('serves /metrics on its own listener on the loopback, never on the public port', async () => {
    const publicAnswer = await fetch(`${stack.info.gatewayUrl}/metrics`);
    expect(publicAnswer.status).toBe(404);
    expect(await publicAnswer.text()).not.toContain('envengine_');
    const own = await fetch(`${stack.info.gatewayMetricsUrls[0]}/metrics`);
    expect(own.status).toBe(200);
    expect(await own.text()).toContain('envengine_http_request_duration_seconds_count');
    expect(new URL(stack.info.gatewayMetricsUrls[0]!).hostname).toBe('127.0.0.1');
  });
});
