/**
 * Errors that mean a backing server (MongoDB, Redis, Temporal) cannot be reached right now.
 * They become 503 `unavailable`; the drivers reconnect by themselves when it returns.
 */
const UNAVAILABLE_ERROR_NAMES = new Set([
  'MongoServerSelectionError',
  'MongooseServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
  'MaxRetriesPerRequestError',
  'BackingServerUnavailableError',
]);

// gRPC status UNAVAILABLE (14) and DEADLINE_EXCEEDED (4), as Temporal's client reports them.
const GRPC_UNAVAILABLE_CODES = new Set([4, 14]);

export class BackingServerUnavailableError extends Error {
  constructor(server: string, cause?: unknown) {
    super(`${server} is unreachable`, { cause });
    this.name = 'BackingServerUnavailableError';
  }
}

export function isBackingServerUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth += 1) {
    if (typeof current !== 'object') return false;
    const candidate = current as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown; metadata?: unknown };
    if (typeof candidate.name === 'string' && UNAVAILABLE_ERROR_NAMES.has(candidate.name)) return true;
    // Only gRPC errors carry metadata; MongoDB uses the same numbers for other things.
    if (typeof candidate.code === 'number' && GRPC_UNAVAILABLE_CODES.has(candidate.code) && candidate.metadata !== undefined) {
      return true;
    }
    if (
      typeof candidate.message === 'string' &&
      /Connection is closed|ECONNREFUSED|connection .* closed|Client must be connected/i.test(candidate.message)
    ) {
      return true;
    }
    current = candidate.cause;
  }
  return false;
}
