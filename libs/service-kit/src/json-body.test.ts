import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ApiError } from './api-error.ts';
import { isJsonContentType, jsonNestsDeeperThan, MAX_JSON_DEPTH, parseJsonBody, readRequestBody } from './json-body.ts';

function request(chunks: string[], headers: Record<string, string> = {}): IncomingMessage {
  const stream = Readable.from(chunks.map((chunk) => Buffer.from(chunk))) as unknown as IncomingMessage;
  stream.headers = headers;
  return stream;
}

describe('readRequestBody', () => {
  it('reads a body within the limit', async () => {
    await expect(readRequestBody(request(['{"a":', '1}']), 100)).resolves.toEqual(Buffer.from('{"a":1}'));
  });

  it('fails with payload_too_large by declared length, before reading', async () => {
    const error = await readRequestBody(request(['x'], { 'content-length': '101' }), 100).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('payload_too_large');
  });

  it('fails with payload_too_large by counting a chunked body', async () => {
    const error = await readRequestBody(request(['x'.repeat(60), 'y'.repeat(60)]), 100).catch((e: unknown) => e);
    expect((error as ApiError).code).toBe('payload_too_large');
  });
});

describe('parseJsonBody', () => {
  it('leaves an empty body undefined, whatever its type', () => {
    expect(parseJsonBody(Buffer.alloc(0), undefined)).toBeUndefined();
  });

  it.each([
    ['{"__proto__": {"x": 1}}', '__proto__'],
    ['{"config": {"a": 1, "__proto__": "s"}}', 'config.__proto__'],
    ['{"lines": [{}, {"\\u005f_proto__": 1}]}', 'lines[1].__proto__'],
  ])('refuses a "__proto__" key, escaped or not, naming where: %s', (text, path) => {
    const error = (() => {
      try {
        parseJsonBody(Buffer.from(text), 'application/json');
      } catch (caught) {
        return caught;
      }
    })() as ApiError;
    expect(error).toBeInstanceOf(ApiError);
    expect(error.code).toBe('invalid_request');
    expect(error.details).toEqual([{ path, message: expect.stringContaining('__proto__') }]);
  });

  it('parses JSON declared as JSON', () => {
    expect(parseJsonBody(Buffer.from('{"x":[1]}'), 'application/json; charset=utf-8')).toEqual({ x: [1] });
    expect(parseJsonBody(Buffer.from('{}'), 'application/merge-patch+json')).toEqual({});
  });

  it.each([
    ['{"x":', 'application/json'],
    ['{"x":1}', 'text/plain'],
    ['{"x":1}', undefined],
  ])('refuses %j sent as %s with invalid_json', (raw, contentType) => {
    expect(() => parseJsonBody(Buffer.from(raw), contentType)).toThrow(expect.objectContaining({ code: 'invalid_json' }));
  });

  it('recognises JSON media types only', () => {
    expect(isJsonContentType('APPLICATION/JSON')).toBe(true);
    expect(isJsonContentType('application/jsonp')).toBe(false);
    expect(isJsonContentType('text/json-ish')).toBe(false);
  });
});

describe('jsonNestsDeeperThan', () => {
  const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

  it('counts objects and arrays, not brackets inside strings or escaped quotes', () => {
    expect(jsonNestsDeeperThan(Buffer.from(nested(3)), 3)).toBe(false);
    expect(jsonNestsDeeperThan(Buffer.from(nested(4)), 3)).toBe(true);
    expect(jsonNestsDeeperThan(Buffer.from('{"a":[{"b":1}]}'), 3)).toBe(false);
    expect(jsonNestsDeeperThan(Buffer.from('{"a":[{"b":{"c":1}}]}'), 3)).toBe(true);
    expect(jsonNestsDeeperThan(Buffer.from(`{"s":"${'[{'.repeat(50)}","t":"\\\"[[[[["}`), 1)).toBe(false);
    // Siblings do not add up.
    expect(jsonNestsDeeperThan(Buffer.from(`[${Array.from({ length: 100 }, () => '[]').join(',')}]`), 2)).toBe(false);
  });

  it('makes parseJsonBody refuse a body deeper than the limit with invalid_json, naming it', () => {
    const json = 'application/json';
    expect(parseJsonBody(Buffer.from(nested(MAX_JSON_DEPTH)), json)).toBeDefined();
    const error = (() => {
      try {
        parseJsonBody(Buffer.from(`{"config":${nested(5000)}}`), json);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: 'invalid_json', message: `The request body nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels.` });
  });
});
