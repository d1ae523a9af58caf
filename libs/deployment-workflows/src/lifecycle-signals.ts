import { defineSignal } from '@temporalio/workflow';
import { EXPIRY_MOVED_SIGNAL, SCHEDULES_CHANGED_SIGNAL } from '@envengine/contracts/workflow-inputs';

/** A deploy or a PATCH moved a preview's expiry (an ISO 8601 instant; null removes the TTL). */
export const expiryMoved = defineSignal<[string | null]>(EXPIRY_MOVED_SIGNAL);

/** To a shard's tick loop: its stored schedules changed, so it reads its earliest fire time again. */
export const schedulesChanged = defineSignal(SCHEDULES_CHANGED_SIGNAL);
