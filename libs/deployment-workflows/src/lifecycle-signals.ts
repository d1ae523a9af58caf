import { defineSignal } from '@temporalio/workflow';
import { EXPIRY_MOVED_SIGNAL } from '@envengine/contracts';

/** A deploy or a PATCH moved a preview's expiry (an ISO 8601 instant; null removes the TTL). */
export const expiryMoved = defineSignal<[string | null]>(EXPIRY_MOVED_SIGNAL);
