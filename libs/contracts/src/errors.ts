import { z } from 'zod';

/** Every `error.code` the public API can answer with (docs/design.md#wire-conventions). */
export const ErrorCode = z.enum([
  'unauthorized',
  /** An API token past its `expires_at`. */
  'token_expired',
  /** A token without the scope the operation needs (the message names it), or limited to environments where the operation spans the tenant. */
  'insufficient_scope',
  'invalid_json',
  'invalid_request',
  'not_found',
  /** A method the path does not declare (the `Allow` header lists those it does). */
  'method_not_allowed',
  /** A preview environment its TTL tore down, named within 7 days of its expiry (the expiry is in the details). */
  'environment_expired',
  'environment_exists',
  'environment_has_previews',
  /** A `file://` storage prefix that contains, or lies inside, another tenant's environment's. */
  'storage_prefix_taken',
  /** A write to an environment whose tear-down is in progress. */
  'environment_deleting',
  /** Delete of an environment with attempts running (without `?force=true`). */
  'runs_running',
  'deployment_not_ready',
  /** Internal: an activation of the environment holds its lock (the workflow retries). */
  'activation_in_progress',
  'unknown_secret',
  'idempotency_key_reused',
  'idempotency_key_in_use',
  'no_active_deployment',
  'run_finished',
  /** A worker write whose attempt lease no longer holds (canceled, presumed lost, finished). */
  'lease_superseded',
  /**
   * A materialization in a store the engine holds no keys to (a binding with an endpoint of
   * the tenant's own): its bytes are read there, with the tenant's keys.
   */
  'materialization_unreachable',
  'payload_too_large',
  /** A `Range` header that no byte of the file satisfies. */
  'range_not_satisfiable',
  'rate_limited',
  /** A per-tenant quota (quotas.ts): the code names the quota. */
  'queued_runs_quota_exceeded',
  'queued_runs_per_environment_quota_exceeded',
  'environments_quota_exceeded',
  'previews_quota_exceeded',
  'bundle_bytes_quota_exceeded',
  'materialization_bytes_quota_exceeded',
  'secrets_per_environment_quota_exceeded',
  'webhooks_quota_exceeded',
  'pool_credentials_quota_exceeded',
  'tokens_quota_exceeded',
  /** A webhook URL whose address is on the engine's own network (loopback, private, link-local, the engine's host). */
  'webhook_target_refused',
  'unavailable',
  'internal_error',
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const ErrorDetail = z.object({ path: z.string(), message: z.string() });
export type ErrorDetail = z.infer<typeof ErrorDetail>;

export const ErrorBody = z.object({
  error: z.object({
    code: ErrorCode,
    message: z.string(),
    details: z.array(ErrorDetail),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/**
 * The error of an HTTP answer's body (its text, or JSON already parsed), or null when the
 * body is not this API's error shape (a proxy's HTML page, an empty body): what every
 * client of the engine's HTTP APIs reads a refusal with.
 */
export function errorOfBody(body: unknown): ErrorBody['error'] | null {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return null;
    }
  }
  const error = ErrorBody.safeParse(parsed);
  return error.success ? error.data.error : null;
}

function assertUnreachable(value: never): never {
  throw new Error(`unhandled error code: ${String(value)}`);
}

/** The one place that maps a domain error code to its HTTP status. */
export function httpStatusFor(code: ErrorCode): number {
  switch (code) {
    case 'unauthorized':
    case 'token_expired':
      return 401;
    case 'insufficient_scope':
      return 403;
    case 'invalid_json':
      return 400;
    case 'invalid_request':
    case 'unknown_secret':
    case 'idempotency_key_reused':
    case 'webhook_target_refused':
      return 422;
    case 'not_found':
    case 'environment_expired':
      return 404;
    case 'method_not_allowed':
      return 405;
    case 'environment_exists':
    case 'environment_has_previews':
    case 'storage_prefix_taken':
    case 'environment_deleting':
    case 'runs_running':
    case 'idempotency_key_in_use':
    case 'deployment_not_ready':
    case 'activation_in_progress':
    case 'no_active_deployment':
    case 'run_finished':
    case 'lease_superseded':
    case 'materialization_unreachable':
      return 409;
    case 'payload_too_large':
      return 413;
    case 'range_not_satisfiable':
      return 416;
    case 'rate_limited':
    case 'queued_runs_quota_exceeded':
    case 'queued_runs_per_environment_quota_exceeded':
    case 'environments_quota_exceeded':
    case 'previews_quota_exceeded':
    case 'bundle_bytes_quota_exceeded':
    case 'materialization_bytes_quota_exceeded':
    case 'secrets_per_environment_quota_exceeded':
    case 'webhooks_quota_exceeded':
    case 'pool_credentials_quota_exceeded':
    case 'tokens_quota_exceeded':
      return 429;
    case 'unavailable':
      return 503;
    case 'internal_error':
      return 500;
    default:
      return assertUnreachable(code);
  }
}

/** Turns zod issues into the `details` list of an error body. */
export function detailsFromZodError(error: z.ZodError): ErrorDetail[] {
  const pathOf = (segments: ReadonlyArray<PropertyKey>) =>
    segments.length > 0 ? segments.map(String).join('.') : '(body)';
  return error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ path: pathOf([...issue.path, key]), message: 'is not a known field' }))
      : [{ path: pathOf(issue.path), message: issue.message }],
  );
}
