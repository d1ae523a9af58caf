// A Parquet writer for the flat, declared columns of a materialization
// (https://parquet.apache.org/docs/file-format/): one column chunk per column and row group,
// each one data page (v1), strings and JSON dictionary-encoded when that pays, Snappy
// pages, min/max statistics and null counts. It is what the asset's sandboxed child runs at
// every emit, always in a fresh process (issue 42): each column is read, converted and
// written in one typed loop into buffers reused from column to column, with no array of
// bytes per value (only a dictionary's distinct strings are UTF-8 encoded on their own), so
// that the encode is fast before V8 has warmed up and leaves little for the collector.
// It uses no Node built-in, so the child's bundle can take it.
import { ByteSink } from './byte-sink.ts';
import type { ColumnType, ResolvedColumn, Row } from './declared-schema.ts';
import { snappyCompress } from './snappy-compress.ts';
import { dateToDays, timestampToMicros } from './temporal-values.ts';
import { ThriftCompactWriter, ThriftType } from './thrift-compact.ts';

const MAGIC = new Uint8Array([0x50, 0x41, 0x52, 0x31]); // "PAR1"

// Parquet's enum values (parquet.thrift).
const PhysicalType = { BOOLEAN: 0, INT32: 1, INT64: 2, DOUBLE: 5, BYTE_ARRAY: 6 } as const;
const Encoding = { PLAIN: 0, RLE: 3, RLE_DICTIONARY: 8 } as const;
const PageType = { DATA_PAGE: 0, DICTIONARY_PAGE: 2 } as const;
const SNAPPY = 1;
const REQUIRED = 0;
const OPTIONAL = 1;

/**
 * How each declared type is stored: the physical type, and the legacy converted type and
 * the logical type both (the format asks for both, so that older readers see them too).
 * Timestamps are UTC instants in microseconds; dates are days since the epoch.
 */
const STORAGE: Record<ColumnType, { physical: number; converted?: number; logical?: (thrift: ThriftCompactWriter) => void }> = {
  string: { physical: PhysicalType.BYTE_ARRAY, converted: 0 /* UTF8 */, logical: (t) => emptyUnionMember(t, 1 /* STRING */) },
  integer: {
    physical: PhysicalType.INT64,
    converted: 18 /* INT_64 */,
    logical: (t) => {
      t.struct(10); // INTEGER
      t.byte(1, 64);
      t.bool(2, true);
      t.end();
    },
  },
  number: { physical: PhysicalType.DOUBLE },
  boolean: { physical: PhysicalType.BOOLEAN },
  timestamp: {
    physical: PhysicalType.INT64,
    converted: 10 /* TIMESTAMP_MICROS */,
    logical: (t) => {
      t.struct(8); // TIMESTAMP
      t.bool(1, true); // isAdjustedToUTC
      t.struct(2); // unit
      emptyUnionMember(t, 2 /* MICROS */);
      t.end();
      t.end();
    },
  },
  date: { physical: PhysicalType.INT32, converted: 6 /* DATE */, logical: (t) => emptyUnionMember(t, 6 /* DATE */) },
  json: { physical: PhysicalType.BYTE_ARRAY, converted: 19 /* JSON */, logical: (t) => emptyUnionMember(t, 12 /* JSON */) },
};

function emptyUnionMember(thrift: ThriftCompactWriter, id: number): void {
  thrift.struct(id);
  thrift.end();
}

/** Min and max of a byte-array column longer than this are left out of its statistics. */
const MAX_STATISTICS_BYTES = 64;

interface ChunkStatistics {
  nullCount: number;
  min?: Uint8Array;
  max?: Uint8Array;
}

interface ChunkMetadata {
  physical: number;
  name: string;
  encodings: number[];
  values: number;
  uncompressedSize: number;
  compressedSize: number;
  dictionaryPageOffset: number | undefined;
  dataPageOffset: number;
  statistics: ChunkStatistics;
}

interface RowGroupMetadata {
  rows: number;
  fileOffset: number;
  uncompressedSize: number;
  compressedSize: number;
  chunks: ChunkMetadata[];
}

/** A column's values in one row group, as its data page will hold them. */
interface EncodedValues {
  /** Present values, encoded (plain, or the dictionary's indices). */
  body: Uint8Array;
  encoding: number;
  /** The dictionary page's plain values, when dictionary-encoded. */
  dictionary?: { bytes: Uint8Array; count: number };
  statistics: ChunkStatistics;
}

/**
 * Writes a Parquet file of flat columns, row group by row group. Rows must already have
 * been checked against the columns (`checkRows`): a value of the wrong type is not caught
 * here. `takeBytes` hands on what was written since its last call.
 */
export class FlatParquetWriter {
  private readonly out = new ByteSink(1024 * 1024);
  private readonly thrift = new ThriftCompactWriter(this.out);
  /** Bytes already handed on by `takeBytes`. */
  private handedOn = 0;
  private readonly rowGroups: RowGroupMetadata[] = [];
  private readonly scratch = new ColumnScratch();

  constructor(
    private readonly columns: readonly ResolvedColumn[],
    private readonly keyValueMetadata: ReadonlyArray<{ key: string; value: string }>,
    private readonly createdBy: string,
  ) {
    if (columns.length === 0) throw new TypeError('A schema without columns cannot be stored as Parquet.');
    this.out.append(MAGIC);
  }

  /** Encodes rows `start` (included) to `end` (excluded) as one row group. */
  writeRowGroup(rows: readonly Row[], start = 0, end = rows.length): void {
    if (end <= start) return;
    const fileOffset = this.position();
    const chunks = this.columns.map((column) => this.writeChunk(column, rows, start, end));
    this.rowGroups.push({
      rows: end - start,
      fileOffset,
      uncompressedSize: chunks.reduce((sum, chunk) => sum + chunk.uncompressedSize, 0),
      compressedSize: chunks.reduce((sum, chunk) => sum + chunk.compressedSize, 0),
      chunks,
    });
  }

  /** Writes the footer; the file is complete once `takeBytes` has handed it on. */
  finish(): void {
    const footerStart = this.out.length;
    this.writeFooter();
    const footerLength = this.out.length - footerStart;
    this.out.i32(footerLength);
    this.out.append(MAGIC);
  }

  /** The bytes written since the last call (a copy). */
  takeBytes(): Uint8Array {
    const bytes = this.out.written().slice();
    this.handedOn += bytes.length;
    this.out.reset();
    return bytes;
  }

  private position(): number {
    return this.handedOn + this.out.length;
  }

  private writeChunk(column: ResolvedColumn, rows: readonly Row[], first: number, end: number): ChunkMetadata {
    const { physical } = STORAGE[column.type];
    const count = end - first;
    const scratch = this.scratch;
    const values = scratch.columnValues(rows, first, end, column.name);
    const encoded = encodeValues(column.type, values, count, scratch);

    const start = this.position();
    let uncompressedSize = 0;
    let compressedSize = 0;
    let dictionaryPageOffset: number | undefined;
    if (encoded.dictionary !== undefined) {
      dictionaryPageOffset = start;
      const sizes = this.writePage(PageType.DICTIONARY_PAGE, encoded.dictionary.bytes, encoded.dictionary.count, Encoding.PLAIN);
      uncompressedSize += sizes.uncompressed;
      compressedSize += sizes.compressed;
    }
    const dataPageOffset = this.position();
    const page = scratch.page;
    page.reset();
    if (column.nullable) {
      // Definition levels (one bit: present or null), length-prefixed as data page v1 asks.
      const lengthAt = page.length;
      page.i32(0);
      writeRleHybrid(page, scratch.definitionLevels, count, 1);
      page.view.setInt32(lengthAt, page.length - lengthAt - 4, true);
    }
    page.append(encoded.body);
    const sizes = this.writePage(PageType.DATA_PAGE, page.written(), count, encoded.encoding);
    uncompressedSize += sizes.uncompressed;
    compressedSize += sizes.compressed;

    const encodings: number[] = [Encoding.PLAIN];
    if (column.nullable) encodings.push(Encoding.RLE);
    if (encoded.encoding === Encoding.RLE_DICTIONARY) encodings.push(Encoding.RLE_DICTIONARY);
    return {
      physical,
      name: column.name,
      encodings,
      values: count,
      uncompressedSize,
      compressedSize,
      dictionaryPageOffset,
      dataPageOffset,
      statistics: encoded.statistics,
    };
  }

  /** A page header and its Snappy-compressed body; the sizes count the header too, as the format's totals do. */
  private writePage(type: number, body: Uint8Array, values: number, encoding: number): { uncompressed: number; compressed: number } {
    const compressed = this.scratch.compressed;
    compressed.reset();
    snappyCompress(body, compressed);
    const headerStart = this.out.length;
    const t = this.thrift;
    t.element();
    t.i32(1, type);
    t.i32(2, body.length);
    t.i32(3, compressed.length);
    if (type === PageType.DICTIONARY_PAGE) {
      t.struct(7);
      t.i32(1, values);
      t.i32(2, encoding);
      t.end();
    } else {
      t.struct(5);
      t.i32(1, values);
      t.i32(2, encoding);
      t.i32(3, Encoding.RLE); // definition levels
      t.i32(4, Encoding.RLE); // repetition levels (none in a flat column)
      t.end();
    }
    t.end();
    const headerLength = this.out.length - headerStart;
    this.out.append(compressed.written());
    return { uncompressed: headerLength + body.length, compressed: headerLength + compressed.length };
  }

  private writeFooter(): void {
    const t = this.thrift;
    t.element();
    t.i32(1, 2); // version
    t.list(2, ThriftType.STRUCT, this.columns.length + 1);
    t.element();
    t.string(4, 'root');
    t.i32(5, this.columns.length);
    t.end();
    for (const column of this.columns) {
      const storage = STORAGE[column.type];
      t.element();
      t.i32(1, storage.physical);
      t.i32(3, column.nullable ? OPTIONAL : REQUIRED);
      t.string(4, column.name);
      if (storage.converted !== undefined) t.i32(6, storage.converted);
      if (storage.logical !== undefined) {
        t.struct(10);
        storage.logical(t);
        t.end();
      }
      t.end();
    }
    t.i64(3, this.rowGroups.reduce((sum, group) => sum + group.rows, 0));
    t.list(4, ThriftType.STRUCT, this.rowGroups.length);
    this.rowGroups.forEach((group, ordinal) => {
      t.element();
      t.list(1, ThriftType.STRUCT, group.chunks.length);
      for (const chunk of group.chunks) this.writeChunkMetadata(chunk);
      t.i64(2, group.uncompressedSize);
      t.i64(3, group.rows);
      t.i64(5, group.fileOffset);
      t.i64(6, group.compressedSize);
      t.i16(7, ordinal);
      t.end();
    });
    t.list(5, ThriftType.STRUCT, this.keyValueMetadata.length);
    for (const { key, value } of this.keyValueMetadata) {
      t.element();
      t.string(1, key);
      t.string(2, value);
      t.end();
    }
    t.string(6, this.createdBy);
    // Every column's min and max follow its type's own order (byte order for strings).
    t.list(7, ThriftType.STRUCT, this.columns.length);
    for (let i = 0; i < this.columns.length; i++) {
      t.element();
      emptyUnionMember(t, 1 /* TYPE_ORDER */);
      t.end();
    }
    t.end();
  }

  private writeChunkMetadata(chunk: ChunkMetadata): void {
    const t = this.thrift;
    t.element();
    t.i64(2, chunk.dictionaryPageOffset ?? chunk.dataPageOffset); // file_offset: where the chunk starts
    t.struct(3);
    t.i32(1, chunk.physical);
    t.list(2, ThriftType.I32, chunk.encodings.length);
    for (const encoding of chunk.encodings) t.listI32(encoding);
    t.list(3, ThriftType.BINARY, 1);
    t.listString(chunk.name);
    t.i32(4, SNAPPY);
    t.i64(5, chunk.values);
    t.i64(6, chunk.uncompressedSize);
    t.i64(7, chunk.compressedSize);
    t.i64(9, chunk.dataPageOffset);
    if (chunk.dictionaryPageOffset !== undefined) t.i64(11, chunk.dictionaryPageOffset);
    t.struct(12);
    t.i64(3, chunk.statistics.nullCount);
    if (chunk.statistics.max !== undefined) t.binary(5, chunk.statistics.max);
    if (chunk.statistics.min !== undefined) t.binary(6, chunk.statistics.min);
    t.end();
    t.end();
    t.end();
  }
}

/** Buffers reused from column to column and row group to row group. */
class ColumnScratch {
  readonly page = new ByteSink(256 * 1024);
  readonly values = new ByteSink(256 * 1024);
  readonly dictionary = new ByteSink(64 * 1024);
  readonly compressed = new ByteSink(256 * 1024);
  definitionLevels = new Uint8Array(0);
  indices = new Int32Array(0);
  private cells: unknown[] = [];

  /** The column's cells of rows `first` to `end` (undefined where left out), and room for their levels. */
  columnValues(rows: readonly Row[], first: number, end: number, name: string): unknown[] {
    const count = end - first;
    if (this.definitionLevels.length < count) {
      this.definitionLevels = new Uint8Array(count);
      this.indices = new Int32Array(count);
    }
    if (this.cells.length !== count) this.cells = new Array<unknown>(count);
    const cells = this.cells;
    if (name in Object.prototype) {
      // As in checkRows: a left-out column named like an Object.prototype member is null, not the member.
      for (let i = 0; i < count; i++) {
        const row = rows[first + i]!;
        cells[i] = Object.hasOwn(row, name) ? row[name] : undefined;
      }
    } else {
      for (let i = 0; i < count; i++) cells[i] = rows[first + i]![name];
    }
    return cells;
  }
}

function encodeValues(type: ColumnType, cells: readonly unknown[], count: number, scratch: ColumnScratch): EncodedValues {
  switch (type) {
    case 'integer':
    case 'timestamp':
      return encodeInt64(cells, count, scratch, type === 'timestamp');
    case 'date':
      return encodeNumbers(cells, count, scratch, true);
    case 'number':
      return encodeNumbers(cells, count, scratch, false);
    case 'boolean':
      return encodeBoolean(cells, count, scratch);
    case 'string':
    case 'json':
      return encodeByteArrays(cells, count, scratch, type === 'json');
  }
}

function encodeInt64(cells: readonly unknown[], count: number, scratch: ColumnScratch, timestamp: boolean): EncodedValues {
  const levels = scratch.definitionLevels;
  const sink = scratch.values;
  sink.reset();
  sink.ensure(count * 8);
  const view = sink.view;
  let at = 0;
  let nullCount = 0;
  let min: number | bigint | undefined;
  let max: number | bigint | undefined;
  for (let i = 0; i < count; i++) {
    const cell = cells[i] as number | bigint | Date | string | null | undefined;
    if (cell === null || cell === undefined) {
      levels[i] = 0;
      nullCount++;
      continue;
    }
    levels[i] = 1;
    const value = timestamp ? timestampToMicros(cell as Date | string) : (cell as number | bigint);
    if (typeof value === 'number') {
      // A safe integer as two 32-bit words, with no bigint made for it.
      view.setUint32(at, value >>> 0, true);
      view.setInt32(at + 4, Math.floor(value / 4294967296), true);
    } else {
      view.setBigInt64(at, value as bigint, true);
    }
    at += 8;
    if (min === undefined || value < min) min = value;
    if (max === undefined || value > max) max = value;
  }
  sink.length = at;
  const statistics: ChunkStatistics = { nullCount };
  if (min !== undefined && max !== undefined) {
    const [low, high] = [BigInt(min), BigInt(max)];
    statistics.min = littleEndian(8, (bounds) => bounds.setBigInt64(0, low, true));
    statistics.max = littleEndian(8, (bounds) => bounds.setBigInt64(0, high, true));
  }
  return { body: sink.written(), encoding: Encoding.PLAIN, statistics };
}

/** A statistics bound of `width` bytes, as `write` sets it. */
function littleEndian(width: number, write: (view: DataView) => void): Uint8Array {
  const bytes = new Uint8Array(width);
  write(new DataView(bytes.buffer));
  return bytes;
}

/** Dates (INT32 days since the epoch) and doubles: plain, fixed width, with min and max. */
function encodeNumbers(cells: readonly unknown[], count: number, scratch: ColumnScratch, dates: boolean): EncodedValues {
  const levels = scratch.definitionLevels;
  const sink = scratch.values;
  const width = dates ? 4 : 8;
  sink.reset();
  sink.ensure(count * width);
  const view = sink.view;
  let at = 0;
  let nullCount = 0;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < count; i++) {
    const cell = cells[i] as number | Date | string | null | undefined;
    if (cell === null || cell === undefined) {
      levels[i] = 0;
      nullCount++;
      continue;
    }
    levels[i] = 1;
    const value = dates ? dateToDays(cell as Date | string) : (cell as number);
    if (dates) view.setInt32(at, value, true);
    else view.setFloat64(at, value, true);
    at += width;
    if (value < min) min = value;
    if (value > max) max = value;
  }
  sink.length = at;
  const statistics: ChunkStatistics = { nullCount };
  if (at > 0) {
    // The format's rule for zeros: a min of zero is written -0, a max of zero +0.
    statistics.min = littleEndian(width, (bounds) => (dates ? bounds.setInt32(0, min, true) : bounds.setFloat64(0, min === 0 ? -0 : min, true)));
    statistics.max = littleEndian(width, (bounds) => (dates ? bounds.setInt32(0, max, true) : bounds.setFloat64(0, max === 0 ? 0 : max, true)));
  }
  return { body: sink.written(), encoding: Encoding.PLAIN, statistics };
}

function encodeBoolean(cells: readonly unknown[], count: number, scratch: ColumnScratch): EncodedValues {
  const levels = scratch.definitionLevels;
  const sink = scratch.values;
  sink.reset();
  sink.ensure(Math.ceil(count / 8));
  const bytes = sink.bytes;
  // Plain booleans are bit-packed, the first value in the lowest bit.
  let present = 0;
  let nullCount = 0;
  let anyTrue = false;
  let anyFalse = false;
  let byte = 0;
  for (let i = 0; i < count; i++) {
    const value = cells[i] as boolean | null | undefined;
    if (value === null || value === undefined) {
      levels[i] = 0;
      nullCount++;
      continue;
    }
    levels[i] = 1;
    if (value) {
      byte |= 1 << (present & 7);
      anyTrue = true;
    } else {
      anyFalse = true;
    }
    present++;
    if ((present & 7) === 0) {
      bytes[(present >>> 3) - 1] = byte;
      byte = 0;
    }
  }
  if ((present & 7) !== 0) bytes[present >>> 3] = byte;
  sink.length = Math.ceil(present / 8);
  const statistics: ChunkStatistics = { nullCount };
  if (present > 0) {
    statistics.min = new Uint8Array([anyFalse ? 0 : 1]);
    statistics.max = new Uint8Array([anyTrue ? 1 : 0]);
  }
  return { body: sink.written(), encoding: Encoding.PLAIN, statistics };
}

const utf8 = new TextEncoder();

/** Appends a plain byte array (4-byte length, UTF-8 bytes) and returns where its bytes start. */
function appendText(sink: ByteSink, text: string): number {
  sink.ensure(4 + text.length * 3);
  const start = sink.length + 4;
  const bytes = sink.bytes;
  let at = start;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) {
      // Not ASCII: the rest goes through the platform's encoder.
      at += utf8.encodeInto(text.slice(i), bytes.subarray(at)).written;
      break;
    }
    bytes[at++] = code;
  }
  sink.view.setInt32(start - 4, at - start, true);
  sink.length = at;
  return start;
}

/** Byte order of two ranges of one buffer, as Parquet orders UTF-8 strings. */
function compareBytes(bytes: Uint8Array, a: number, aLength: number, b: number, bLength: number): number {
  const shorter = Math.min(aLength, bLength);
  for (let i = 0; i < shorter; i++) {
    const difference = bytes[a + i]! - bytes[b + i]!;
    if (difference !== 0) return difference;
  }
  return aLength - bLength;
}

/** Tracks the smallest and largest byte arrays appended to one sink. */
class ByteArrayBounds {
  private minStart = -1;
  private minLength = 0;
  private maxStart = -1;
  private maxLength = 0;

  see(bytes: Uint8Array, start: number, length: number): void {
    if (this.minStart < 0 || compareBytes(bytes, start, length, this.minStart, this.minLength) < 0) {
      this.minStart = start;
      this.minLength = length;
    }
    if (this.maxStart < 0 || compareBytes(bytes, start, length, this.maxStart, this.maxLength) > 0) {
      this.maxStart = start;
      this.maxLength = length;
    }
  }

  /** Adds min and max to the statistics, each left out when longer than the limit. */
  into(statistics: ChunkStatistics, bytes: Uint8Array): ChunkStatistics {
    if (this.minStart >= 0 && this.minLength <= MAX_STATISTICS_BYTES) statistics.min = bytes.slice(this.minStart, this.minStart + this.minLength);
    if (this.maxStart >= 0 && this.maxLength <= MAX_STATISTICS_BYTES) statistics.max = bytes.slice(this.maxStart, this.maxStart + this.maxLength);
    return statistics;
  }
}

function encodeByteArrays(cells: readonly unknown[], count: number, scratch: ColumnScratch, json: boolean): EncodedValues {
  const levels = scratch.definitionLevels;
  const indices = scratch.indices;
  // A dictionary pays while its values repeat: past half as many entries as rows, plain.
  const maxEntries = count >>> 1;
  const entries = new Map<string, number>();
  let present = 0;
  let nullCount = 0;
  let useDictionary = maxEntries > 0;
  for (let i = 0; i < count; i++) {
    const value = cells[i];
    if (value === null || value === undefined) {
      levels[i] = 0;
      nullCount++;
      continue;
    }
    levels[i] = 1;
    if (!useDictionary) continue;
    const text = json ? JSON.stringify(value) : (value as string);
    let index = entries.get(text);
    if (index === undefined) {
      if (entries.size >= maxEntries) {
        useDictionary = false;
        continue;
      }
      index = entries.size;
      entries.set(text, index);
    }
    indices[present++] = index;
  }

  if (useDictionary && entries.size > 0) {
    const dictionary = scratch.dictionary;
    dictionary.reset();
    const bounds = new ByteArrayBounds();
    for (const text of entries.keys()) {
      const start = appendText(dictionary, text);
      bounds.see(dictionary.bytes, start, dictionary.length - start);
    }
    const sink = scratch.values;
    sink.reset();
    const bitWidth = Math.max(1, 32 - Math.clz32(entries.size - 1));
    sink.u8(bitWidth);
    writeRleHybrid(sink, indices, present, bitWidth);
    return {
      body: sink.written(),
      encoding: Encoding.RLE_DICTIONARY,
      dictionary: { bytes: dictionary.written(), count: entries.size },
      statistics: bounds.into({ nullCount }, dictionary.bytes),
    };
  }

  const sink = scratch.values;
  sink.reset();
  const bounds = new ByteArrayBounds();
  for (let i = 0; i < count; i++) {
    const value = cells[i];
    if (value === null || value === undefined) continue;
    const start = appendText(sink, json ? JSON.stringify(value) : (value as string));
    bounds.see(sink.bytes, start, sink.length - start);
  }
  return { body: sink.written(), encoding: Encoding.PLAIN, statistics: bounds.into({ nullCount }, sink.bytes) };
}

/**
 * Parquet's RLE / bit-packed hybrid of `count` values of `bitWidth` bits: runs of eight or
 * more equal values as one repeated value, the rest bit-packed in groups of eight.
 */
export function writeRleHybrid(sink: ByteSink, values: Uint8Array | Int32Array, count: number, bitWidth: number): void {
  const valueBytes = (bitWidth + 7) >>> 3;
  let i = 0;
  while (i < count) {
    let runEnd = i + 1;
    while (runEnd < count && values[runEnd] === values[i]) runEnd++;
    if (runEnd - i >= 8) {
      sink.varint((runEnd - i) * 2);
      const value = values[i]!;
      sink.ensure(valueBytes);
      for (let b = 0; b < valueBytes; b++) sink.bytes[sink.length++] = (value >>> (8 * b)) & 0xff;
      i = runEnd;
      continue;
    }
    // Bit-pack up to the next run of eight or more, in whole groups of eight values.
    let packEnd = runEnd;
    while (packEnd < count) {
      let next = packEnd + 1;
      while (next < count && values[next] === values[packEnd]) next++;
      if (next - packEnd >= 8) break;
      packEnd = next;
    }
    const groups = Math.ceil((packEnd - i) / 8);
    sink.varint(groups * 2 + 1);
    sink.ensure(groups * bitWidth);
    const bytes = sink.bytes;
    let at = sink.length;
    let buffer = 0;
    let bits = 0;
    const end = i + groups * 8;
    // Past the last value the group is padded with zeros. Fewer than 8 bits wait in the
    // buffer, so a value of up to 24 bits fits beside them in 32.
    const packable = Math.min(end, count);
    if (bitWidth <= 24) {
      for (let j = i; j < packable; j++) {
        buffer |= values[j]! << bits;
        bits += bitWidth;
        while (bits >= 8) {
          bytes[at++] = buffer & 0xff;
          buffer >>>= 8;
          bits -= 8;
        }
      }
    } else {
      for (let j = i; j < packable; j++) {
        buffer += values[j]! * 2 ** bits;
        bits += bitWidth;
        while (bits >= 8) {
          bytes[at++] = buffer & 0xff;
          buffer = Math.floor(buffer / 256);
          bits -= 8;
        }
      }
    }
    // The padding's zeros: whole bytes of them, after the last bits left in the buffer.
    const groupBytes = groups * bitWidth;
    const packEndAt = sink.length + groupBytes;
    if (at < packEndAt) {
      bytes[at++] = buffer & 0xff;
      while (at < packEndAt) bytes[at++] = 0;
    }
    sink.length = at;
    i = Math.min(end, count);
  }
}
