import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Run } from '@envengine/contracts';
import { createTenant, deployProject, startTestStack, until, type TestStack, type TestTenant } from '@envengine/test-harness';
import { ASSET_CODE, deployRunsProject, RUN_TEST_SETTINGS, runsManifest, waitForRun } from './runs-fixtures.ts';

const shared = inject('stack');

/** OTLP span kinds (SPAN_KIND_*). */
const KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

interface OtlpAttribute {
  key: string;
  value: Record<string, unknown>;
}

/** OTLP/JSON ids are hex; tolerate base64 too. */
function hexId(id: unknown): string {
  if (typeof id !== 'string' || id === '') return '';
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, Object.values(value)[0]]));
}

/** The test's own OTLP/HTTP receiver: what the processes export to `/v1/traces`, as JSON. */
class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every export as sent, for the secret scan. */
  readonly bodies: string[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.url === '/v1/traces' && req.method === 'POST') {
          const text = Buffer.concat(chunks).toString('utf8');
          this.bodies.push(text);
          const body = JSON.parse(text) as {
            resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
          };
          for (const resourceSpans of body.resourceSpans ?? []) {
            const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
            for (const scope of resourceSpans.scopeSpans ?? []) {
              for (const span of scope.spans ?? []) {
                this.spans.push({
                  service,
                  traceId: hexId(span.traceId),
                  spanId: hexId(span.spanId),
                  parentSpanId: hexId(span.parentSpanId),
                  name: String(span.name),
                  kind: Number(span.kind),
                  attributes: attributesOf(span.attributes as OtlpAttribute[]),
                });
              }
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    if (!address || typeof address === 'string') throw new Error('no address');
    this.url = `http://127.0.0.1:${address.port}`;
  }

  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/** The span's ancestors within its trace, nearest first (stops at a parent not received). */
function ancestors(spans: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  const chain: ReceivedSpan[] = [];
  for (let parent = spans.find((candidate) => candidate.spanId === span.parentSpanId); parent; parent = spans.find((candidate) => candidate.spanId === parent!.parentSpanId)) {
    chain.push(parent);
  }
  return chain;
}

describe('OpenTelemetry traces (a stack of its own, exporting to the test\'s OTLP receiver)', () => {
  const receiver = new OtlpReceiver();
  let stack: TestStack;
  let tenant: TestTenant;

  beforeAll(async () => {
    await receiver.start();
    stack = await startTestStack({
      mongoUrl: shared.mongoUrl,
      temporalAddress: shared.temporalAddress,
      // Batches leave every 100 ms rather than every 5 s: the test waits for them.
      env: { ...RUN_TEST_SETTINGS, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' },
    });
    tenant = await createTenant(stack.info, 'traces');
    await deployRunsProject(tenant, join(stack.info.dataDir, 'lake', 'traces'), 'local');
  });

  afterAll(async () => {
    await stack?.stop();
    await receiver.stop();
  });

  it('follows a run from the gateway through the placement-service and BullMQ to the attempt and its asset, in one trace', async () => {
    const created = await tenant.api.post('/environments/prod/runs', { assets: ['orders'] });
    expect(created.status).toBe(201);
    const run = await waitForRun(tenant, Run.parse(created.body.data).id);
    expect(run.status).toBe('succeeded');

    const gatewaySpan = await until(
      async () => receiver.spans.find((span) => span.service === 'gateway' && span.kind === KIND.server && span.name === 'POST /api/v1/environments/:param/runs'),
      (span) => span !== undefined,
      15_000,
      100,
    );
    const traceId = gatewaySpan!.traceId;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    // The worker's spans are exported in batches after each ends, the asset's first and its
    // parents (the attempt, the job's consumer) after it: wait for all three.
    const spans = await until(
      async () => receiver.trace(traceId),
      (found) =>
        found.some((span) => span.service === 'attempt-worker' && span.name === 'asset') &&
        found.some((span) => span.service === 'attempt-worker' && span.name === 'attempt') &&
        found.some((span) => span.service === 'attempt-worker' && span.kind === KIND.consumer),
      15_000,
      100,
    );

    const placementSpan = spans.find((span) => span.service === 'placement-service' && span.kind === KIND.server && span.name === 'POST /api/v1/environments/:param/runs');
    const producer = spans.find((span) => span.service === 'placement-service' && span.kind === KIND.producer);
    const consumer = spans.find((span) => span.service === 'attempt-worker' && span.kind === KIND.consumer);
    const attempt = spans.find((span) => span.service === 'attempt-worker' && span.name === 'attempt');
    const asset = spans.find((span) => span.service === 'attempt-worker' && span.name === 'asset');
    expect({ placementSpan, producer, consumer, attempt, asset }).toEqual({
      placementSpan: expect.any(Object),
      producer: expect.any(Object),
      consumer: expect.any(Object),
      attempt: expect.any(Object),
      asset: expect.any(Object),
    });
    expect(asset!.attributes['envengine.asset.key']).toBe('orders');
    expect(attempt!.attributes['envengine.attempt.id']).toBe(run.attempts[0]!.id);

    // One tree: the asset's ancestors are the attempt, the consumer, the producer, the
    // placement-service's request and the gateway's, in that order.
    const chain = ancestors(spans, asset!).map((span) => span.spanId);
    const order = [attempt, consumer, producer, placementSpan, gatewaySpan].map((span) => chain.indexOf(span!.spanId));
    expect(order.every((index) => index >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(gatewaySpan!.parentSpanId).toBe('');

    // The trace id is in the JSON log lines of the requests it covers.
    const placementLog = readFileSync(join(stack.info.dataDir, 'logs', 'placement-service.log'), 'utf8');
    expect(placementLog.split('\n').some((line) => line.includes(`"trace_id":"${traceId}"`) && line.includes('"msg":"request"'))).toBe(true);
    const workerLog = readFileSync(join(stack.info.dataDir, 'logs', 'attempt-worker.log'), 'utf8');
    expect(workerLog.split('\n').some((line) => line.includes(`"trace_id":"${traceId}"`) && line.includes('attempt done'))).toBe(true);
  });

  it('exports no secret value: a run that resolves a secret leaves it in no span', async () => {
    const canary = `trace-canary-${randomBytes(12).toString('hex')}`;
    expect((await tenant.api.put('/environments/prod/secrets/gate-token', { value: canary })).status).toBe(201);
    expect((await tenant.api.put('/environments/prod/bindings/gate', { config: { open: true }, secret_refs: { token: 'gate-token' } })).status).toBe(200);
    const created = await tenant.api.post('/environments/prod/runs', { assets: ['gated'] });
    const run = await waitForRun(tenant, Run.parse(created.body.data).id);
    expect(run.status).toBe('succeeded');
    const traceSpans = await until(
      async () => receiver.spans.filter((span) => span.attributes['envengine.attempt.id'] === run.attempts[0]!.id),
      (found) => found.length > 0,
      15_000,
      100,
    );
    expect(traceSpans).toHaveLength(1);
    // The resolution's request span is in the attempt's trace (the sandbox's call, made
    // under its asset's span), so the scan covers the path the value took.
    const attemptTrace = await until(
      async () => receiver.trace(traceSpans[0]!.traceId),
      // The secrets-service's span of the resolution too: the scan below covers what it exported.
      (found) => found.some((span) => span.service === 'placement-service' && span.name.includes('/connections/')) && found.some((span) => span.service === 'secrets-service'),
      15_000,
      100,
    );
    const connectionSpan = attemptTrace.find((span) => span.service === 'placement-service' && span.name.includes('/connections/'));
    expect(connectionSpan?.name).toBe('POST /api/v1/worker/attempts/:param/connections/:param');
    expect(ancestors(attemptTrace, connectionSpan!).map((span) => span.name)).toContain('asset');
    const leaks = (bodies: string[]) => bodies.filter((body) => body.includes(canary));
    expect(leaks(receiver.bodies)).toEqual([]);
    // Positive control: the scan finds the value where it is.
    expect(leaks([...receiver.bodies, JSON.stringify({ attributes: [{ key: 'x', value: { stringValue: canary } }] })])).toHaveLength(1);
  });

  it('follows an ingest from the gateway through the deployment-service into its workflow and activities, in one trace', async () => {
    const before = new Set(receiver.spans.map((span) => span.traceId));
    await deployProject(tenant.api, {
      environment: 'ingest',
      storagePrefix: `file://${join(stack.info.dataDir, 'lake', 'ingest')}`,
      executor: 'local',
      bindings: { warehouse: {}, gate: { config: { open: false } } },
      files: ASSET_CODE,
      manifest: runsManifest(),
    });
    const gatewaySpan = await until(
      async () =>
        receiver.spans.find(
          (span) => span.service === 'gateway' && span.name === 'POST /api/v1/environments/:param/deployments' && !before.has(span.traceId),
        ),
      (span) => span !== undefined,
      15_000,
      100,
    );
    // Each process exports on its own schedule: wait until the ingest workflow's spans are
    // in and hang from the gateway's request (a parent may arrive after its children).
    const hangsFromGateway = (found: ReceivedSpan[], span: ReceivedSpan) => ancestors(found, span).some((parent) => parent.spanId === gatewaySpan!.spanId);
    const ingestSpans = (found: ReceivedSpan[]) =>
      found.filter((span) => span.service === 'workflow-worker' && /^(RunWorkflow:ingestDeployment|RunActivity:validateAndRecord|RunActivity:requestActivation)$/.test(span.name));
    const spans = await until(
      async () => receiver.trace(gatewaySpan!.traceId),
      // Every kind present (an activity retried under load adds a span of a kind already there).
      (found) => new Set(ingestSpans(found).map((span) => span.name)).size === 3 && ingestSpans(found).every((span) => hangsFromGateway(found, span)),
      15_000,
      100,
    );
    const tree = spans.map((span) => `${span.service} ${span.name} ${span.spanId} <- ${span.parentSpanId}`).join('\n');
    const names = new Set(spans.map((span) => `${span.service} ${span.name}`));
    for (const name of [
      'deployment-service POST /api/v1/environments/:param/deployments',
      'deployment-service StartWorkflow:ingestDeployment',
      'workflow-worker RunWorkflow:ingestDeployment',
      'workflow-worker RunActivity:validateAndRecord',
      'workflow-worker RunActivity:requestActivation',
      // The activation it asks for, in the environment's long-lived activation workflow.
      'workflow-worker SignalWithStartWorkflow:environmentActivations',
      'workflow-worker RunActivity:activate',
    ]) {
      expect(names.has(name), `${name} in\n${tree}`).toBe(true);
    }
    // The ingest's spans hang from the gateway's request. (The activation workflow's own
    // span is exported when that workflow ends, which is not while its environment lives.)
    for (const span of [...ingestSpans(spans), ...spans.filter((candidate) => candidate.service === 'deployment-service')]) {
      expect(hangsFromGateway(spans, span), `${span.service} ${span.name} in\n${tree}`).toBe(true);
    }
  });
});
