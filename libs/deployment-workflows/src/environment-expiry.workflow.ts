import { condition, continueAsNew, patched, setHandler, workflowInfo, type ActivityOptions } from '@temporalio/workflow';
import type { ExpireEnvironmentResult } from '@envengine/contracts';
import { EnvironmentExpiryInput } from '@envengine/contracts/workflow-inputs';
import { workflowInput } from './workflow-input.ts';
import { EXPIRY_NOTICE_MS, type PlacementLifecycleActivities } from './definitions.ts';
import { scopeActivities } from './scope-queues.ts';
import { expiryMoved } from './lifecycle-signals.ts';

const STEP_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 100 },
};

/**
 * `expiry-<environment id>`: a preview environment's TTL as a durable Temporal timer, not
 * a poller. It sleeps until the expiry; each deploy signals the new instant and the sleep
 * starts over. When it wakes, the placement-service decides against the stored expiry
 * (the record of truth: a signal lost in flight cannot expire an environment early) and
 * begins the tear-down, or answers the later instant to sleep until. An hour before the
 * expiry (at once when less is left) it records `environment.expiring`, once per instant.
 */
export async function environmentExpiry(raw: EnvironmentExpiryInput): Promise<void> {
  const input = workflowInput(EnvironmentExpiryInput, raw, 'environmentExpiry');
  // The placement scope's steps, on its own queue (scope-queues.ts).
  const { expireEnvironment, noticeEnvironmentExpiry } = scopeActivities<PlacementLifecycleActivities>('placement', STEP_OPTIONS);
  let expiresAt: string | null = input.expiresAt;
  let moved = false;
  /** The expiry whose notice was given (the placement-service records it once per instant anyway). */
  let noticedFor: string | null = null;
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
    // Timers started before the notice existed replay without it.
    if (noticedFor !== expiresAt && patched('expiry-notice')) {
      const noticing: string = expiresAt;
      const untilNotice = Date.parse(noticing) - EXPIRY_NOTICE_MS - Date.now();
      moved = false;
      if (untilNotice > 0 && (await condition(() => moved, untilNotice))) continue;
      await noticeEnvironmentExpiry({ ...input, expiresAt: noticing });
      noticedFor = noticing;
      // A signal during the notice may have moved or cleared the expiry: look again.
      continue;
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
