import { describe, expect, it } from 'vitest';
import { ByteSink } from './byte-sink.ts';
import { ThriftCompactWriter, ThriftType } from './thrift-compact.ts';

/** What a write leaves on the wire. */
function wire(write: (thrift: ThriftCompactWriter) => void): number[] {
  const sink = new ByteSink(4);
  write(new ThriftCompactWriter(sink));
  return [...sink.written()];
}

describe('ThriftCompactWriter', () => {
  it('names each field by its id delta and its declared type, as typed readers check it', () => {
    expect(
      wire((t) => {
        t.element();
        t.i32(1, 2); // delta 1, i32, zigzag 4
        t.i16(7, -3); // delta 6, i16, zigzag 5
        t.bool(8, true); // delta 1, the value in the type
        t.byte(9, 64);
        t.i64(30, 1); // delta 22: the type alone, then the id as a zigzag varint
        t.end();
      }),
    ).toEqual([0x15, 4, 0x64, 5, 0x11, 0x13, 64, ThriftType.I64, 60, 2, 0]);
  });

  it('writes lists with their size in the header up to 14, and a varint past it', () => {
    expect(wire((t) => t.list(1, ThriftType.I32, 3))).toEqual([0x19, 0x35]);
    expect(wire((t) => t.list(1, ThriftType.STRUCT, 20))).toEqual([0x19, 0xfc, 20]);
  });

  it('starts each nested struct\'s field ids from zero again', () => {
    expect(
      wire((t) => {
        t.element();
        t.struct(3);
        t.i32(1, 0);
        t.end();
        t.i32(4, 0);
        t.end();
      }),
    ).toEqual([0x3c, 0x15, 0, 0, 0x15, 0, 0]);
  });
});
