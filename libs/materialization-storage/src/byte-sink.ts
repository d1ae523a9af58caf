// A growable little-endian byte buffer, written in place: the Parquet writer's pages,
// dictionaries and footer are built in these, with no array of bytes per value.

export class ByteSink {
  bytes: Uint8Array;
  view: DataView;
  length = 0;

  constructor(capacity = 64 * 1024) {
    this.bytes = new Uint8Array(capacity);
    this.view = new DataView(this.bytes.buffer);
  }

  /** Makes room for `extra` more bytes. */
  ensure(extra: number): void {
    const needed = this.length + extra;
    if (needed <= this.bytes.length) return;
    let capacity = this.bytes.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
    this.view = new DataView(grown.buffer);
  }

  reset(): void {
    this.length = 0;
  }

  /** The bytes written so far (a view: valid until the next write or reset). */
  written(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }

  u8(value: number): void {
    this.ensure(1);
    this.bytes[this.length++] = value;
  }

  i32(value: number): void {
    this.ensure(4);
    this.view.setInt32(this.length, value, true);
    this.length += 4;
  }

  /** An unsigned LEB128 varint of a non-negative safe integer. */
  varint(value: number): void {
    this.ensure(8);
    while (value >= 0x80) {
      this.bytes[this.length++] = (value & 0x7f) | 0x80;
      value = Math.floor(value / 128);
    }
    this.bytes[this.length++] = value;
  }

  append(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.bytes.set(bytes, this.length);
    this.length += bytes.length;
  }
}
