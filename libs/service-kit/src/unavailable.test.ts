import { describe, expect, it } from 'vitest';
import { ApiError } from './api-error.ts';
import { BackingServerUnavailableError, isBackingServerUnavailable } from './unavailable.ts';

function named(name: string, message = 'boom'): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

describe('isBackingServerUnavailable', () => {
  it.each(['MongoServerSelectionError', 'MongoNetworkError', 'MongoNotConnectedError', 'MaxRetriesPerRequestError'])('knows %s', (name) => {
    expect(isBackingServerUnavailable(named(name))).toBe(true);
  });

  it('knows a gRPC UNAVAILABLE from Temporal, also as a cause', () => {
    const grpc = Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14, metadata: {} });
    expect(isBackingServerUnavailable(grpc)).toBe(true);
    expect(isBackingServerUnavailable(new Error('start failed', { cause: grpc }))).toBe(true);
    expect(isBackingServerUnavailable(new BackingServerUnavailableError('temporal'))).toBe(true);
  });

  it('knows a refused connection', () => {
    expect(isBackingServerUnavailable(new Error('connect ECONNREFUSED 127.0.0.1:6379'))).toBe(true);
  });

  it('does not mistake MongoDB error numbers for gRPC ones', () => {
    const mongo = Object.assign(named('MongoServerError', 'Type mismatch'), { code: 14, codeName: 'TypeMismatch' });
    expect(isBackingServerUnavailable(mongo)).toBe(false);
  });

  it('leaves other errors alone', () => {
    expect(isBackingServerUnavailable(new TypeError('x is undefined'))).toBe(false);
    expect(isBackingServerUnavailable(new ApiError('not_found', 'gone'))).toBe(false);
    expect(isBackingServerUnavailable(undefined)).toBe(false);
    expect(isBackingServerUnavailable('text')).toBe(false);
  });
});
