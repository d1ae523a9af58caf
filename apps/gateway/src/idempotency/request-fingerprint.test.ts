import { describe, expect, it } from 'vitest';
import { requestFingerprint } from './request-fingerprint.ts';

const json = (value: string) => Buffer.from(value);

describe('requestFingerprint', () => {
  it('ignores key order and white space of a JSON body', () => {
    expect(requestFingerprint('POST', '/a', json('{"a":1,"b":{"c":[1,2]}}'))).toBe(
      requestFingerprint('POST', '/a', json(' { "b": {"c": [1, 2]}, "a": 1 } ')),
    );
  });

  it('tells apart bodies, paths and methods', () => {
    const base = requestFingerprint('POST', '/a', json('{"a":1}'));
    expect(requestFingerprint('POST', '/a', json('{"a":2}'))).not.toBe(base);
    expect(requestFingerprint('POST', '/b', json('{"a":1}'))).not.toBe(base);
    expect(requestFingerprint('PUT', '/a', json('{"a":1}'))).not.toBe(base);
    expect(requestFingerprint('POST', '/a', json('[1,2]'))).not.toBe(requestFingerprint('POST', '/a', json('[2,1]')));
  });

  it('compares a body that is not JSON byte for byte, and an empty one as absent', () => {
    expect(requestFingerprint('POST', '/a', json('{oops'))).toBe(requestFingerprint('POST', '/a', json('{oops')));
    expect(requestFingerprint('POST', '/a', json('{oops'))).not.toBe(requestFingerprint('POST', '/a', json('{oops ')));
    expect(requestFingerprint('POST', '/a', Buffer.alloc(0))).toBe(requestFingerprint('POST', '/a', undefined));
  });
});
