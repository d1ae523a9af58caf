import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import { EnvironmentTeardownInput } from '@envengine/contracts/workflow-inputs';
import { workflowInput } from './workflow-input.ts';
import type { EnvironmentLifecycleActivities, PlacementLifecycleActivities, SecretsLifecycleActivities } from './definitions.ts';
import { scopeActivities } from './scope-queues.ts';

// Each step is retried until it passes (a service restarting, Temporal's own hiccups): a
// tear-down never stops half-way on a transient fault. The cap is generous, about an hour,
// and a tear-down that still fails is started again by the next DELETE or by the
// placement-service's start-up, from the first step (every step is idempotent).
const STEP_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 150 },
};
/** The deployment scope's steps, on the workflows' queue (the workflow-worker, which owns its data). */
const steps = proxyActivities<EnvironmentLifecycleActivities>(STEP_OPTIONS);

/**
 * `teardown-<environment id>`: removes an environment that was marked `deleting` (no run,
 * deploy or setting is admitted after that mark). The order matters: what could start
 * work goes first (activations, expiry, schedules), then the runs, the files (while the
 * bindings that reach them still exist), the secrets, the deployment records, and last
 * the environment itself, so that until the very end GET shows it `deleting` and a
 * second DELETE joins this workflow.
 */
export async function environmentTeardown(raw: EnvironmentTeardownInput): Promise<{ name: string }> {
  const input = workflowInput(EnvironmentTeardownInput, raw, 'environmentTeardown');
  const scope = { tenantId: input.tenantId, environmentId: input.environmentId, environmentName: input.environmentName };
  // The placement and secrets scopes' steps, each on its scope's own queue (scope-queues.ts).
  const placement = scopeActivities<PlacementLifecycleActivities>('placement', STEP_OPTIONS);
  const secrets = scopeActivities<SecretsLifecycleActivities>('secrets', STEP_OPTIONS);
  await steps.stopEnvironmentWorkflows({ ...scope, expired: input.expired });
  await placement.deleteEnvironmentSchedules(scope);
  await placement.removeEnvironmentRuns(scope);
  if (input.purgeData) {
    for (let after: string | null = null; ; ) {
      const page: { next: string | null } = await placement.purgeMaterializationFiles({ ...scope, after });
      if (page.next === null) break;
      after = page.next;
    }
  }
  await secrets.retireEnvironmentSecrets(scope);
  await steps.removeDeploymentRecords(scope);
  await placement.removeEnvironment(scope);
  return { name: input.environmentName };
}
