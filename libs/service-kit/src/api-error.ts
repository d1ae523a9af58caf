import { type ErrorCode, type ErrorDetail, httpStatusFor, QUOTA_RULES, type QuotaName } from '@envengine/contracts';

/** A domain error that the edge turns into `{"error": {code, message, details}}`. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetail[];
  /** Extra response headers, such as `Retry-After` or `WWW-Authenticate`. */
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.details = options.details ?? [];
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return httpStatusFor(this.code);
  }

  toBody() {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export function notFound(what: string): ApiError {
  return new ApiError('not_found', `${what} was not found.`);
}

/** A token limited to environments asking to make one outside them (403 `insufficient_scope`). */
export function environmentOutsideToken(name: string, patterns: readonly string[]): ApiError {
  return new ApiError('insufficient_scope', `This token is limited to ${patterns.join(', ')}, which do not include "${name}".`, {
    details: [{ path: 'name', message: `outside ${patterns.join(', ')}` }],
  });
}

/** The refusal of a write to an environment whose tear-down has begun (409 `environment_deleting`). */
export function environmentDeleting(name: string): ApiError {
  return new ApiError('environment_deleting', `Environment "${name}" is being deleted; it takes no more changes.`);
}

export function unauthorized(message = 'A valid bearer token is required.'): ApiError {
  return new ApiError('unauthorized', message, { headers: { 'WWW-Authenticate': 'Bearer' } });
}

/** A refusal by one of the tenant's quotas (429, a code naming the quota, and `Retry-After`). */
export function quotaExceeded(quota: QuotaName, limit: number, message: string): ApiError {
  return new ApiError(QUOTA_RULES[quota].errorCode, `${message} Your limit is ${limit}; GET /api/v1/quotas shows your limits and use.`, {
    details: [{ path: quota, message: `the limit is ${limit}` }],
    headers: { 'Retry-After': String(QUOTA_RULES[quota].retryAfterSeconds) },
  });
}
