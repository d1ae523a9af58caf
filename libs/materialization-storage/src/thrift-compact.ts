// Thrift's compact protocol, the encoding of Parquet's page headers and footer
// (https://github.com/apache/thrift/blob/master/doc/specs/thrift-compact-protocol.md),
// written field by field: the Parquet writer names each field id where it writes it.
import type { ByteSink } from './byte-sink.ts';

/** Compact protocol type ids of the fields and list elements Parquet's metadata uses. */
export const ThriftType = { TRUE: 1, FALSE: 2, BYTE: 3, I16: 4, I32: 5, I64: 6, BINARY: 8, LIST: 9, STRUCT: 12 } as const;

const encoder = new TextEncoder();

export class ThriftCompactWriter {
  /** The last field id written in each open struct (delta encoding of field headers). */
  private readonly lastFieldIds: number[] = [0];

  constructor(private readonly sink: ByteSink) {}

  i16(id: number, value: number): void {
    this.field(id, ThriftType.I16);
    this.zigzag(value);
  }

  i32(id: number, value: number): void {
    this.field(id, ThriftType.I32);
    this.zigzag(value);
  }

  /** An i64 field of a safe integer (offsets, sizes and counts). */
  i64(id: number, value: number): void {
    this.field(id, ThriftType.I64);
    this.zigzag(value);
  }

  byte(id: number, value: number): void {
    this.field(id, ThriftType.BYTE);
    this.sink.u8(value & 0xff);
  }

  bool(id: number, value: boolean): void {
    this.field(id, value ? ThriftType.TRUE : ThriftType.FALSE);
  }

  binary(id: number, bytes: Uint8Array): void {
    this.field(id, ThriftType.BINARY);
    this.sink.varint(bytes.length);
    this.sink.append(bytes);
  }

  string(id: number, text: string): void {
    this.binary(id, encoder.encode(text));
  }

  /** Opens a struct field; close it with `end()`. */
  struct(id: number): void {
    this.field(id, ThriftType.STRUCT);
    this.lastFieldIds.push(0);
  }

  /** Opens a list field of `size` elements of `elementType`. */
  list(id: number, elementType: number, size: number): void {
    this.field(id, ThriftType.LIST);
    if (size < 15) {
      this.sink.u8((size << 4) | elementType);
    } else {
      this.sink.u8(0xf0 | elementType);
      this.sink.varint(size);
    }
  }

  /** Opens a struct that is a list element (or the outermost struct); close it with `end()`. */
  element(): void {
    this.lastFieldIds.push(0);
  }

  listI32(value: number): void {
    this.zigzag(value);
  }

  listString(text: string): void {
    const bytes = encoder.encode(text);
    this.sink.varint(bytes.length);
    this.sink.append(bytes);
  }

  /** Closes the innermost open struct. */
  end(): void {
    this.sink.u8(0);
    this.lastFieldIds.pop();
  }

  private field(id: number, type: number): void {
    const last = this.lastFieldIds.length - 1;
    const delta = id - this.lastFieldIds[last]!;
    if (delta > 0 && delta <= 15) {
      this.sink.u8((delta << 4) | type);
    } else {
      this.sink.u8(type);
      this.zigzag(id);
    }
    this.lastFieldIds[last] = id;
  }

  private zigzag(value: number): void {
    this.sink.varint(value >= 0 ? value * 2 : -value * 2 - 1);
  }
}
