import { z } from 'zod';
import { DEFAULT_TASK_QUEUE } from '@envengine/deployment-workflows';
import { TracingSettings } from '@envengine/tracing';
import { InternalCredential, LogLevel, parseConfig, PortFromEnv, temporalConfigShape, ServiceOriginsFromEnv } from '@envengine/service-kit';

const workflowWorkerConfigSchema = z.object({
  ...temporalConfigShape,
  DEPLOYMENTS_TASK_QUEUE: z.string().default(DEFAULT_TASK_QUEUE),
  INTERNAL_CREDENTIAL: InternalCredential,
  /** The deployment scope's database, which this worker shares with the deployment-service. */
  MONGO_URL: z.string({ message: 'is required' }).min(1),
  MONGO_DB: z.string().default('envengine_deployment'),
  PLACEMENT_SERVICE_URL: ServiceOriginsFromEnv('placement-service', 'http://127.0.0.1:8081'),
  SECRETS_SERVICE_URL: ServiceOriginsFromEnv('secrets-service', 'http://127.0.0.1:8083'),
  HOST: z.string().default('127.0.0.1'),
  PORT: PortFromEnv(8084),
  LOG_LEVEL: LogLevel,
  ...TracingSettings.shape,
});

export type WorkflowWorkerConfig = z.infer<typeof workflowWorkerConfigSchema>;

export function loadWorkflowWorkerConfig(env: Record<string, string | undefined>): WorkflowWorkerConfig {
  return parseConfig(workflowWorkerConfigSchema, env);
}
