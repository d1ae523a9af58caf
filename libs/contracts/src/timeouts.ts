/**
 * How long the gateway waits for a service's answer (its `UPSTREAM_TIMEOUT_MS` default).
 * A service that waits on a workflow answers before this, with what it knows (say, a
 * deployment id and 202), so that the gateway never gives up first and a retry with the
 * same Idempotency-Key replays that answer instead of starting the work again.
 */
export const GATEWAY_UPSTREAM_TIMEOUT_MS = 30_000;

/**
 * The longest time limit a manifest's asset or a run may ask for (`timeout_seconds`): a
 * day. The runner's own limit (the operator's `ASSET_TIMEOUT_MS`) caps it further, and a
 * run's attempt is told which of the limits stopped it.
 */
export const MAX_TIMEOUT_SECONDS = 86_400;

/** What a service's wait leaves of the gateway's timeout, for the answer to travel back. */
export const SERVICE_WAIT_MARGIN_MS = 5_000;
