import type { SecretsLifecycleActivities, TeardownStepReport } from '@envengine/contracts';

/** The tear-down's step on this scope's data, served on its own task queue (main.ts) over its own repositories. */
export function secretsLifecycleActivities(retire: (tenantId: string, environmentId: string) => Promise<TeardownStepReport>): SecretsLifecycleActivities {
  return {
    retireEnvironmentSecrets: ({ tenantId, environmentId }) => retire(tenantId, environmentId),
  };
}
