/**
 * How long the gateway waits for a service's answer (its `UPSTREAM_TIMEOUT_MS` default).
 * A service that waits on a workflow answers before this, with what it knows (say, a
 * deployment id and 202), so that the gateway never gives up first and a retry with the
 * same Idempotency-Key replays that answer instead of starting the work again.
 */
export const GATEWAY_UPSTREAM_TIMEOUT_MS = 30_000;

/** What a service's wait leaves of the gateway's timeout, for the answer to travel back. */
export const SERVICE_WAIT_MARGIN_MS = 5_000;
