import { z } from 'zod';

/** A tenant id: `ten_` and 26 Crockford base32 characters, so no `*`, `?`, `[`, `\` or `:` can reach an ACL key pattern. */
export const TENANT_ID_PATTERN = /^ten_[0-9a-z]{26}$/;

/**
 * The engine's own tenant id: the engine's runner reports itself under it while it serves
 * no tenant (an idle runner is still up, and its slots still count), and engine-wide
 * internal calls (a tick loop's pass) carry it. No tenant has it: ids are made from the
 * creation time, and this one's time is the Unix epoch. Only the services' internal
 * credential may name a tenant; a pool worker's is its token's.
 */
export const ENGINE_TENANT_ID = 'ten_00000000000000000000000000';

/**
 * The queue payload of an attempt (BullMQ job data): ids only, never secret values or user
 * data. Checked when the placement-service adds it and when a worker takes it.
 */
export const AttemptJob = z.strictObject({
  attempt_id: z.string().regex(/^att_[0-9a-z]{26}$/),
  run_id: z.string().regex(/^run_[0-9a-z]{26}$/),
  tenant_id: z.string().regex(TENANT_ID_PATTERN),
  /** 0 at first; bumped when a draining worker hands the attempt back. */
  dispatch: z.number().int().nonnegative(),
});
export type AttemptJob = z.infer<typeof AttemptJob>;
