import { describe, expect, it } from 'vitest';
import { parseByteRange } from './byte-range.ts';

describe('parseByteRange', () => {
  it('reads the three forms of one range, clipping the end to the file', () => {
    expect(parseByteRange('bytes=0-9', 100)).toEqual({ start: 0, end: 9 });
    expect(parseByteRange('bytes=90-', 100)).toEqual({ start: 90, end: 99 });
    expect(parseByteRange('bytes=-10', 100)).toEqual({ start: 90, end: 99 });
    expect(parseByteRange('bytes=-500', 100)).toEqual({ start: 0, end: 99 });
    expect(parseByteRange('bytes=50-1000', 100)).toEqual({ start: 50, end: 99 });
    expect(parseByteRange('Bytes = 5 - 6', 100)).toEqual({ start: 5, end: 6 });
  });

  it('answers unsatisfiable when no byte of the range is in the file', () => {
    expect(parseByteRange('bytes=100-', 100)).toBe('unsatisfiable');
    expect(parseByteRange('bytes=150-', 100)).toBe('unsatisfiable');
    expect(parseByteRange('bytes=200-300', 100)).toBe('unsatisfiable');
    expect(parseByteRange('bytes=-0', 100)).toBe('unsatisfiable');
    expect(parseByteRange('bytes=0-', 0)).toBe('unsatisfiable');
  });

  it('ignores what is not one byte range, so the whole file is sent', () => {
    for (const header of ['bytes=0-1,5-6', 'items=0-1', 'bytes=9-3', 'bytes=-', 'bytes=a-b', '', `bytes=0-${'9'.repeat(30)}`]) {
      expect(parseByteRange(header, 100)).toBeNull();
    }
  });
});
