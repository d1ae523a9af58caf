import { Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ApiError } from './api-error.ts';
import { isJsonContentType, parseJsonBody, readRequestBody } from './json-body.ts';

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
