import { condition, continueAsNew, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import { EnvironmentExpiryInput, type ExpireEnvironmentResult } from '@envengine/contracts';
import { workflowInput } from './workflow-input.ts';
import type { EnvironmentLifecycleActivities } from './definitions.ts';
import { expiryMoved } from './lifecycle-signals.ts';

const { expireEnvironment } = proxyActivities<EnvironmentLifecycleActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 100 },
});

/**
 * `expiry-<environment id>`: a preview environment's TTL as a durable Temporal timer, not
 * a poller. It sleeps until the expiry; each deploy signals the new instant and the sleep
 * starts over. When it wakes, the placement-service decides against the stored expiry
 * (the record of truth: a signal lost in flight cannot expire an environment early) and
 * begins the tear-down, or answers the later instant to sleep until.
 */
export async function environmentExpiry(raw: EnvironmentExpiryInput): Promise<void> {
  const input = workflowInput(EnvironmentExpiryInput, raw, 'environmentExpiry');
  let expiresAt: string | null = input.expiresAt;
  let moved = false;
  setHandler(expiryMoved, (next) => {
    expiresAt = next;
    moved = true;
  });
  for (;;) {
    if (expiresAt === null) return;
    // Each deploy adds a signal and a timer: a long-lived preview's history starts afresh.
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof environmentExpiry>({ ...input, expiresAt });
    }
    // At least a second between checks: a clock behind Temporal's may answer an instant already past.
    const wait = Math.max(1_000, Date.parse(expiresAt) - Date.now());
    moved = false;
    if (await condition(() => moved, wait)) continue;
    const outcome: ExpireEnvironmentResult = await expireEnvironment({ ...input, expiresAt });
    if (outcome.expired) return;
    expiresAt = outcome.expires_at;
  }
}
