import { Connection } from '@temporalio/client';
import { z } from 'zod';
import { createLogger, LogLevel, parseConfig, PortFromEnv, startHealthServer, stopOnSignals } from '@envengine/service-kit';

const config = parseConfig(
  z.object({
    TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
    TEMPORAL_NAMESPACE: z.string().default('default'),
    HOST: z.string().default('127.0.0.1'),
    PORT: PortFromEnv(8084),
    LOG_LEVEL: LogLevel,
  }),
  process.env,
);
const log = createLogger('workflow-worker', config.LOG_LEVEL);

// Runs the ingest and activation workflows once the deployments issue adds them; for now
// it holds a connection to Temporal and reports whether the namespace answers.
const connection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });

const server = await startHealthServer({
  service: 'workflow-worker',
  host: config.HOST,
  port: config.PORT,
  log,
  readiness: {
    temporal: async () => {
      await connection.workflowService.describeNamespace({ namespace: config.TEMPORAL_NAMESPACE });
      return true;
    },
  },
});
log.info({ port: server.port, temporal: config.TEMPORAL_ADDRESS }, 'workflow-worker ready');

stopOnSignals(log, async () => {
  await server.close();
  await connection.close();
});
