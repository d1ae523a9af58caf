import { describe, expect, it } from 'vitest';
import { bytesFrameOf, decodeValue, encodeValue, frameContent, FrameError, FrameReader, frameOf } from './sandbox-wire.ts';
import { MAX_CHILD_MESSAGE_DEPTH } from './sandbox-protocol.ts';

describe('the sandbox channel', () => {
  it('carries what rows hold beyond JSON: Date, bigint, non-finite numbers, undefined, bytes, and strings that start with NUL', () => {
    const value = {
      at: new Date(Date.UTC(2026, 10, 26, 12)),
      invalid: new Date(Number.NaN),
      big: 2n ** 63n - 1n,
      negative: -(2n ** 63n),
      nan: Number.NaN,
      inf: Number.POSITIVE_INFINITY,
      missing: undefined,
      bytes: new Uint8Array([0, 1, 254, 255]),
      nul: '\u0000d123',
      nested: [{ when: new Date(0), list: [1n, 'plain'] }],
    };
    const decoded = decodeValue(encodeValue(value)) as typeof value;
    expect(decoded.at).toEqual(value.at);
    expect(Number.isNaN(decoded.invalid.getTime())).toBe(true);
    expect(decoded.big).toBe(value.big);
    expect(decoded.negative).toBe(value.negative);
    expect(decoded.nan).toBeNaN();
    expect(decoded.inf).toBe(Number.POSITIVE_INFINITY);
    expect('missing' in decoded).toBe(false);
    expect(decoded.bytes).toEqual(value.bytes);
    expect(decoded.nul).toBe('\u0000d123');
    expect(decoded.nested).toEqual(value.nested);
    expect(decodeValue(encodeValue(undefined))).toBeUndefined();
  });

  it('writes a flat row of plain values as plain JSON, and reads it back without a reviver', () => {
    const row = { id: 7, name: 'ada', ok: true, missing: null, ratio: 0.5 };
    expect(encodeValue(row)).toBe(JSON.stringify(row));
    expect(decodeValue(encodeValue(row))).toEqual(row);
    // One value that needs a tag sends the whole row through the replacer.
    expect(decodeValue(encodeValue({ ...row, name: '\u0000x' }))).toEqual({ ...row, name: '\u0000x' });
    expect(decodeValue(encodeValue({ ...row, ratio: Number.NaN }))).toEqual({ ...row, ratio: Number.NaN });
  });

  it('refuses an unknown tag and text that is not JSON', () => {
    expect(() => decodeValue('"\\u0000zz"')).toThrow(FrameError);
    expect(() => decodeValue('{')).toThrow(SyntaxError);
  });

  it("refuses a message nested deeper than the runner's limit before it is parsed, in a fraction of the parse's time", () => {
    // 3 MB of brackets around a tagged string, so that the old path runs the reviver too.
    const levels = 1_500_000;
    const deep = `${'['.repeat(levels)}"\\u0000u"${']'.repeat(levels)}`;
    const timed = (decode: () => unknown): { ms: number; error: unknown } => {
      const started = performance.now();
      let error: unknown = null;
      try {
        decode();
      } catch (thrown) {
        error = thrown;
      }
      return { ms: performance.now() - started, error };
    };
    const old = timed(() => decodeValue(deep));
    const checked = timed(() => decodeValue(deep, MAX_CHILD_MESSAGE_DEPTH));
    console.log(`a ${deep.length}-character nested frame: ${old.ms.toFixed(1)} ms parsed, ${checked.ms.toFixed(1)} ms refused by the depth scan`);
    expect(checked.error).toBeInstanceOf(FrameError);
    expect((checked.error as Error).message).toBe(`a message nested deeper than ${MAX_CHILD_MESSAGE_DEPTH} levels`);
    expect(checked.ms).toBeLessThan(old.ms / 5);
  });

  it('counts only brackets outside strings, and passes a message at the limit', () => {
    const atLimit = `${'['.repeat(MAX_CHILD_MESSAGE_DEPTH)}${']'.repeat(MAX_CHILD_MESSAGE_DEPTH)}`;
    expect(decodeValue(atLimit, MAX_CHILD_MESSAGE_DEPTH)).toBeInstanceOf(Array);
    expect(() => decodeValue(`[${atLimit}]`, MAX_CHILD_MESSAGE_DEPTH)).toThrow(FrameError);
    const message = { type: 'log', message: `"[{\\${'['.repeat(100)}` };
    expect(decodeValue(encodeValue(message), MAX_CHILD_MESSAGE_DEPTH)).toEqual(message);
    expect(decodeValue(encodeValue({ type: 'call', id: 1, method: 'emit', arg: { error: 'no' } }), 2)).toEqual({ type: 'call', id: 1, method: 'emit', arg: { error: 'no' } });
  });

  it('reads frames however the bytes are cut, messages and file bytes alike', () => {
    const file = new Uint8Array([0, 1, 2, 255]);
    const bytes = Buffer.concat([frameOf('{"a":1}'), bytesFrameOf(2 ** 32 - 1, file), frameOf('"é"'), bytesFrameOf(7, new Uint8Array(0)), frameOf('[]')]);
    for (let cut = 0; cut <= bytes.byteLength; cut++) {
      const reader = new FrameReader(1024);
      expect([...reader.push(bytes.subarray(0, cut)), ...reader.push(bytes.subarray(cut))].map(frameContent)).toEqual([
        { kind: 'message', json: '{"a":1}' },
        { kind: 'bytes', id: 2 ** 32 - 1, bytes: Buffer.from(file) },
        { kind: 'message', json: '"é"' },
        { kind: 'bytes', id: 7, bytes: Buffer.alloc(0) },
        { kind: 'message', json: '[]' },
      ]);
      expect(reader.pending).toBe(0);
    }
  });

  it('refuses a frame of bytes too short to name its call', () => {
    expect(() => frameContent(Buffer.from([0, 0, 0]))).toThrow('a frame of bytes without the id of its call');
  });

  it('refuses a frame announced over the limit as soon as its header is read, keeping none of it', () => {
    const reader = new FrameReader(8);
    expect(reader.push(frameOf('12345678')).map(String)).toEqual(['12345678']);
    expect(() => reader.push(Buffer.from([0, 0, 0, 9]))).toThrow("a message of 9 bytes, over the channel's limit of 8 bytes");
    expect(reader.pending).toBe(0);
  });
});
