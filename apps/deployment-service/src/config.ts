import { z } from 'zod';
import { DEFAULT_TASK_QUEUE } from '@envengine/deployment-workflows';
import { BUNDLE_UNPACKED_DEFAULTS, GATEWAY_UPSTREAM_TIMEOUT_MS, SERVICE_WAIT_MARGIN_MS } from '@envengine/contracts';
import { internalServiceConfigSchema, parseConfig, PositiveIntFromEnv, temporalConfigShape, ServiceOriginsFromEnv } from '@envengine/service-kit';

const deploymentConfigSchema = internalServiceConfigSchema({ port: 8082, mongoDb: 'envengine_deployment' }).extend({
  PLACEMENT_SERVICE_URL: ServiceOriginsFromEnv('placement-service', 'http://127.0.0.1:8081'),
  ...temporalConfigShape,
  /** Task queue the workflow-worker polls for ingest and activation. */
  DEPLOYMENTS_TASK_QUEUE: z.string().default(DEFAULT_TASK_QUEUE),
  /** Largest bundle, in bytes. */
  BUNDLE_LIMIT_BYTES: PositiveIntFromEnv(64 * 1024 * 1024),
  /** Largest size a bundle may unpack to, in MiB (a tar bomb is refused at upload). */
  BUNDLE_MAX_UNPACKED_MB: PositiveIntFromEnv(BUNDLE_UNPACKED_DEFAULTS.maxUnpackedMb),
  /** Most files (and directories) a bundle may hold. */
  BUNDLE_MAX_FILES: PositiveIntFromEnv(BUNDLE_UNPACKED_DEFAULTS.maxFiles),
  /**
   * A bundle that no deployment names is removed this long after its upload or its last
   * use (a deployment naming it, the same bytes uploaded again), in seconds: a day.
   */
  BUNDLE_RETENTION_SECONDS: PositiveIntFromEnv(24 * 60 * 60),
  /**
   * How long an ingest or activation request waits for its workflow before answering that
   * it is still running (an ingest: 202 with the deployment id). Below the gateway's
   * upstream timeout, so that the gateway never times out first.
   */
  WORKFLOW_WAIT_MS: PositiveIntFromEnv(GATEWAY_UPSTREAM_TIMEOUT_MS - SERVICE_WAIT_MARGIN_MS),
});

export type DeploymentConfig = z.infer<typeof deploymentConfigSchema>;

export function loadDeploymentConfig(env: Record<string, string | undefined>): DeploymentConfig {
  return parseConfig(deploymentConfigSchema, env);
}
