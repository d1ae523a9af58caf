import fc from 'fast-check';
import { snappyUncompress } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { ByteSink } from './byte-sink.ts';
import { maxCompressedLength, snappyCompress } from './snappy-compress.ts';

/** The compressed bytes alone. */
function compress(input: Uint8Array): Uint8Array {
  const sink = new ByteSink(16);
  snappyCompress(input, sink);
  return sink.written();
}

/** The bytes back through another implementation's decompressor (hyparquet's, which reads every page). */
function roundTrip(input: Uint8Array): Uint8Array {
  const output = new Uint8Array(input.length);
  snappyUncompress(compress(input), output);
  return output;
}

describe('snappyCompress', () => {
  it('round-trips any bytes through another decompressor, within the format\'s size bound', () => {
    const repetitive = fc
      .tuple(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 2000 }))
      .map(([unit, times]) => new Uint8Array(Array.from({ length: times }, () => [...unit]).flat()));
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 3000 }), repetitive), (input) => {
        const compressed = compress(input);
        expect(compressed.length).toBeLessThanOrEqual(maxCompressedLength(input.length));
        expect(roundTrip(input)).toEqual(input);
      }),
      { numRuns: 150 },
    );
  });

  it('round-trips inputs longer than one 64 KiB fragment, and shrinks repeated ones', () => {
    const random = new Uint8Array(200_000);
    for (let i = 0; i < random.length; i++) random[i] = (Math.imul(i, 2654435761) >>> 13) & 0xff;
    expect(Buffer.from(roundTrip(random)).equals(random)).toBe(true);
    const words = new TextEncoder().encode(Array.from({ length: 20_000 }, (_, i) => `customer-${i % 500};`).join(''));
    expect(Buffer.from(roundTrip(words)).equals(words)).toBe(true);
    expect(compress(words).length).toBeLessThan(words.length / 4);
  });

  it('compresses nothing to its length alone, and appends after what the sink holds', () => {
    const sink = new ByteSink(4);
    sink.u8(0xaa);
    expect(snappyCompress(new TextEncoder().encode('abc'), sink)).toBe(5);
    expect([...sink.written()]).toEqual([0xaa, 3, 2 << 2, 0x61, 0x62, 0x63]);
    expect([...compress(new Uint8Array(0))]).toEqual([0]);
  });
});
