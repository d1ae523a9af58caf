import { z } from 'zod';
import { InternalCredential, LogLevel, parseConfig, PortFromEnv } from '@envengine/service-kit';

const workflowWorkerConfigSchema = z.object({
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  DEPLOYMENTS_TASK_QUEUE: z.string().default('deployments'),
  INTERNAL_CREDENTIAL: InternalCredential,
  PLACEMENT_SERVICE_URL: z.url().default('http://127.0.0.1:8081'),
  DEPLOYMENT_SERVICE_URL: z.url().default('http://127.0.0.1:8082'),
  SECRETS_SERVICE_URL: z.url().default('http://127.0.0.1:8083'),
  HOST: z.string().default('127.0.0.1'),
  PORT: PortFromEnv(8084),
  LOG_LEVEL: LogLevel,
});

export type WorkflowWorkerConfig = z.infer<typeof workflowWorkerConfigSchema>;

export function loadWorkflowWorkerConfig(env: Record<string, string | undefined>): WorkflowWorkerConfig {
  return parseConfig(workflowWorkerConfigSchema, env);
}
