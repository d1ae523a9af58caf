import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { installTemporalRuntime, tracedActivity } from '@envengine/temporal-worker';
import { BundleRepository, DeploymentRepository, MaterializationRepository } from '@envengine/deployment-data';
import { LegacyTemporalSchedules } from '@envengine/environment-schedules';
import { EventOutbox } from '@envengine/event-log';
import { PlacementClient, SecretsClient } from '@envengine/service-clients';
import { connectMongo, createLogger, pingMongo, startHealthServer, stopOnSignals, temporalClientConnectionOptions, temporalClientInterceptors, temporalConnectionOptions } from '@envengine/service-kit';
import { startTracing } from '@envengine/tracing';
import { makeWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import { createMetricsRegistry, activationMetrics, exposition } from '@envengine/service-metrics';
import { deploymentActivities } from './activities/deployment-activities.ts';
import { lifecycleActivities } from './activities/lifecycle-activities.ts';
import { retireTemporalSchedules, scheduleActivities, TICK_PASS_TIMEOUT_MS } from './activities/schedule-activities.ts';
import { loadWorkflowWorkerConfig } from './config.ts';

const config = loadWorkflowWorkerConfig(process.env);
const tracing = startTracing('workflow-worker', config);
const log = createLogger('workflow-worker', config.LOG_LEVEL);

// The workflow code is bundled at build time (tools/build/build-workflows.mjs); with
// tracing on, the bundle that carries the OpenTelemetry workflow interceptors.
const workflowBundle = join(dirname(fileURLToPath(import.meta.url)), tracing.enabled ? 'workflow-bundle-traced.js' : 'workflow-bundle.js');
if (!existsSync(workflowBundle)) throw new Error(`${workflowBundle} is missing: build the app (npx nx run workflow-worker:build)`);

installTemporalRuntime(log);

const metricsRegistry = createMetricsRegistry('workflow-worker');
const credential = config.INTERNAL_CREDENTIAL;
const clients = {
  placement: new PlacementClient({ origins: config.PLACEMENT_SERVICE_URL, credential }),
  tickPasses: new PlacementClient({ origins: config.PLACEMENT_SERVICE_URL, credential, timeoutMs: TICK_PASS_TIMEOUT_MS }),
  secrets: new SecretsClient({ origins: config.SECRETS_SERVICE_URL, credential }),
};

// The deployment scope's collections, shared with the deployment-service. Its event outbox
// too: an ingest's outcome, an activation and a quarantine write their event there in their
// own transaction; the deployment-service's relay publishes them (its poll finds them).
const mongo = await connectMongo({ url: config.MONGO_URL, dbName: config.MONGO_DB, service: 'workflow-worker' }, log);
const outbox = new EventOutbox(mongo);
const bundles = new BundleRepository(mongo);
const deployments = new DeploymentRepository(mongo, bundles, outbox);
const materializations = new MaterializationRepository(mongo, outbox);
await Promise.all([outbox.ensureIndexes(), deployments.ensureIndexes(), bundles.ensureIndexes(), materializations.ensureIndexes()]);

// Retries until Temporal answers: the worker may start before it.
let connection: NativeConnection | undefined;
for (let attempt = 1; !connection; attempt += 1) {
  try {
    connection = await NativeConnection.connect(temporalConnectionOptions(config));
  } catch (error) {
    log.warn({ attempt, err: (error as Error).message }, 'Temporal unreachable; retrying');
    await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 250 * attempt)));
  }
}

// Activities hand activation requests to an environment's workflow (signal-with-start).
const clientConnection = Connection.lazy(temporalClientConnectionOptions(config));
const temporal = new Client({ connection: clientConnection, namespace: config.TEMPORAL_NAMESPACE, interceptors: temporalClientInterceptors(config) });

const legacySchedules = new LegacyTemporalSchedules(temporal);
const worker = await Worker.create({
  connection,
  namespace: config.TEMPORAL_NAMESPACE,
  taskQueue: config.DEPLOYMENTS_TASK_QUEUE,
  workflowBundle: { codePath: workflowBundle },
  activities: {
    ...deploymentActivities({
      ...clients,
      deployments,
      bundles,
      materializations,
      temporal,
      taskQueue: config.DEPLOYMENTS_TASK_QUEUE,
      metrics: activationMetrics(metricsRegistry),
    }),
    ...lifecycleActivities({ ...clients, deployments, materializations, temporal, legacySchedules }),
  },
  // Workflows here are short and few at a time: a small cache keeps the idle footprint down.
  maxCachedWorkflows: 100,
  // Tracing on: each activity is a span in its workflow's trace, and the workflow's own
  // spans (made in its sandbox) leave through the exporter sink.
  ...(tracing.enabled && tracing.spanProcessor && tracing.resource
    ? {
        interceptors: { activity: [tracedActivity] },
        sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
      }
    : {}),
});
const running = worker.run();
// In the background: Temporal Schedules of a data directory made before the tick loops are
// replaced by stored schedules; a start cut short does the rest at the next one.
void retireTemporalSchedules(legacySchedules, clients.placement, scheduleActivities({ deployments, placement: clients.placement, tickPasses: clients.tickPasses }).reconcileTo, log).catch((error: Error) =>
  log.warn({ err: error.message }, 'could not retire the Temporal Schedules of the first design; the next start-up tries again'),
);

const server = await startHealthServer({
  service: 'workflow-worker',
  metrics: () => exposition(metricsRegistry),
  host: config.HOST,
  port: config.PORT,
  readiness: { temporal: async () => worker.getState() === 'RUNNING', mongodb: () => pingMongo(mongo) },
});
log.info({ port: server.port, temporal: config.TEMPORAL_ADDRESS, taskQueue: config.DEPLOYMENTS_TASK_QUEUE }, 'workflow-worker running');

running.catch((error: unknown) => {
  log.fatal({ err: (error as Error).message }, 'worker stopped');
  process.exit(1);
});

stopOnSignals(log, async () => {
  await server.close();
  worker.shutdown();
  await running.catch(() => undefined);
  await connection.close();
  await clientConnection.close();
  await mongo.close();
  await Promise.all(Object.values(clients).map((client) => client.close()));
  await tracing.shutdown();
});
