import type { StoredColumn } from '@envengine/contracts';
import { cachedAsyncBuffer, parquetMetadata, parquetMetadataAsync, parquetReadObjects, type AsyncBuffer, type FileMetaData, type SchemaElement } from 'hyparquet';
import { resolveColumns, type ColumnType, type DeclaredSchema, type Row } from './declared-schema.ts';
import { FlatParquetWriter } from './flat-parquet-writer.ts';
import { checkRows } from './row-check.ts';
import { formatDateDays, formatTimestampMicros } from './temporal-values.ts';

/** Key of the file's key-value metadata that holds the declared columns, as JSON. */
export const SCHEMA_METADATA_KEY = 'envengine.schema';

/**
 * The writer, in the form the format asks for (`<application> version <version> (build <hash>)`):
 * parquet-mr (and so Spark) ignores the string statistics of a file whose writer it cannot parse.
 */
const CREATED_BY = 'envengine version 1.0.0 (build materialization-storage)';

/** The bytes are not a Parquet file this library can read (or not one at all). */
export class ParquetFileError extends Error {
  override readonly name = 'ParquetFileError';
}

/** Rows per row group: a group's columns and bytes are what the writer holds beside the rows. */
export const ROWS_PER_GROUP = 65_536;

/** A row group of at least one row: any other size would never end the file's loop. */
export function checkRowsPerGroup(rowsPerGroup: number): void {
  if (!Number.isSafeInteger(rowsPerGroup) || rowsPerGroup < 1) throw new RangeError(`Rows per row group must be a positive integer, not ${rowsPerGroup}.`);
}

/**
 * A Parquet file of the declared columns (one flat column each, `REQUIRED` unless
 * nullable), with the declared columns in the key-value metadata under
 * `SCHEMA_METADATA_KEY`. An empty schema is refused, since Parquet could not count its rows.
 */
export function parquetFileWriter(schema: DeclaredSchema): FlatParquetWriter {
  const columns = resolveColumns(schema);
  return new FlatParquetWriter(columns, [{ key: SCHEMA_METADATA_KEY, value: JSON.stringify({ columns }) }], CREATED_BY);
}

/**
 * Encodes rows as one Parquet file of the declared column types (`parquetFileWriter`).
 * The rows are checked first (`checkRows`): a mismatch throws a `RowSchemaError`.
 */
export function encodeParquet(schema: DeclaredSchema, rows: readonly Row[], rowsPerGroup = ROWS_PER_GROUP): Uint8Array {
  checkRowsPerGroup(rowsPerGroup);
  checkRows(schema, rows);
  const file = parquetFileWriter(schema);
  for (let start = 0; start < rows.length; start += rowsPerGroup) file.writeRowGroup(rows, start, Math.min(rows.length, start + rowsPerGroup));
  file.finish();
  return file.takeBytes();
}

/** What a stored file holds, read from its own footer. */
export interface ParquetFileSummary {
  columns: StoredColumn[];
  row_count: number;
}

function readFooter(bytes: Uint8Array): FileMetaData {
  try {
    return parquetMetadata(bytes);
  } catch (error) {
    throw new ParquetFileError(`Not a readable Parquet file (${(error as Error).message}).`, { cause: error });
  }
}

/** Declared types by column name from the key-value metadata, or an empty map when absent or malformed. */
function declaredTypesOf(metadata: FileMetaData): Map<string, string> {
  const text = metadata.key_value_metadata?.find((entry) => entry.key === SCHEMA_METADATA_KEY)?.value;
  const types = new Map<string, string>();
  if (text === undefined) return types;
  try {
    const parsed = JSON.parse(text) as { columns?: Array<{ name?: unknown; type?: unknown }> };
    for (const column of parsed.columns ?? []) {
      if (typeof column.name === 'string' && typeof column.type === 'string') types.set(column.name, column.type);
    }
  } catch {
    // The metadata only breaks ties; the file's own schema still says what is stored.
  }
  return types;
}

/**
 * The declared type a flat Parquet column stores, from its physical, logical and converted
 * types; undefined when no declared type stores it that way.
 */
function typeOfElement(element: SchemaElement): ColumnType | undefined {
  const { type, converted_type: converted, logical_type: logical } = element;
  switch (type) {
    case 'BOOLEAN':
      return 'boolean';
    case 'FLOAT':
    case 'DOUBLE':
      return logical === undefined && converted === undefined ? 'number' : undefined;
    case 'INT32':
      if (converted === 'DATE' || logical?.type === 'DATE') return 'date';
      if (logical?.type === 'INTEGER') return logical.isSigned || logical.bitWidth < 32 ? 'integer' : undefined;
      return converted === undefined || converted === 'INT_8' || converted === 'INT_16' || converted === 'INT_32' ||
        converted === 'UINT_8' || converted === 'UINT_16'
        ? 'integer'
        : undefined;
    case 'INT64':
      if (logical?.type === 'TIMESTAMP') return 'timestamp';
      if (converted === 'TIMESTAMP_MILLIS' || converted === 'TIMESTAMP_MICROS') return 'timestamp';
      if (logical?.type === 'INTEGER') return logical.isSigned ? 'integer' : undefined;
      return converted === undefined || converted === 'INT_64' ? 'integer' : undefined;
    case 'BYTE_ARRAY':
      if (converted === 'JSON' || logical?.type === 'JSON') return 'json';
      return converted === 'UTF8' || logical?.type === 'STRING' ? 'string' : undefined;
    default:
      return undefined;
  }
}

function describeElement(element: SchemaElement): string {
  const annotations = [element.logical_type?.type, element.converted_type].filter((value) => value !== undefined);
  return annotations.length === 0 ? String(element.type) : `${element.type} (${annotations.join(', ')})`;
}

/** Stored columns (names, declared type names, nullability) and row count of a file's footer. */
function summarize(metadata: FileMetaData): ParquetFileSummary {
  const [root, ...elements] = metadata.schema;
  if (root === undefined || root.num_children !== elements.length) {
    throw new ParquetFileError('The Parquet file has nested columns; materializations store flat columns only.');
  }
  const declared = declaredTypesOf(metadata);
  const columns = elements.map((element): StoredColumn => {
    if (element.num_children !== undefined || element.repetition_type === 'REPEATED') {
      throw new ParquetFileError(`Column "${element.name}" of the Parquet file is nested or repeated; materializations store flat columns only.`);
    }
    let type: ColumnType | undefined = typeOfElement(element);
    if (type === undefined) {
      throw new ParquetFileError(`Column "${element.name}" is stored as ${describeElement(element)}, which no declared column type maps to.`);
    }
    // Plain UTF-8 cannot tell a JSON document from a string: the declared type decides.
    if (type === 'string' && declared.get(element.name) === 'json') type = 'json';
    return { name: element.name, type, nullable: element.repetition_type !== 'REQUIRED' };
  });
  const rowCount = Number(metadata.num_rows);
  if (!Number.isSafeInteger(rowCount) || rowCount < 0) throw new ParquetFileError(`The Parquet file claims ${metadata.num_rows} rows.`);
  return { columns, row_count: rowCount };
}

/** Stored columns and row count, read from a Parquet file's own footer. */
export function describeParquet(bytes: Uint8Array): ParquetFileSummary {
  return summarize(readFooter(bytes));
}

/**
 * The columns a Parquet file stores, as declared type names (`integer`, `timestamp`…) and
 * nullability, read from the file's schema; the key-value metadata only tells a JSON
 * column written as plain UTF-8 from a string column. Throws a `ParquetFileError` for
 * bytes that are not Parquet or columns no declared type maps to.
 */
export function storedColumnsOf(bytes: Uint8Array): StoredColumn[] {
  return describeParquet(bytes).columns;
}

// hyparquet calls these for non-null values only; they shape what `decodeParquet` returns.
const PARSERS = {
  timestampFromMilliseconds: (millis: bigint) => formatTimestampMicros(millis * 1000n),
  timestampFromMicroseconds: (micros: bigint) => formatTimestampMicros(micros),
  timestampFromNanoseconds: (nanos: bigint) => formatTimestampMicros(nanos / 1000n - (nanos % 1000n < 0n ? 1n : 0n)),
  dateFromDays: (days: number) => formatDateDays(days),
};

/**
 * Reads every row of a Parquet file back, one object per row with every stored column,
 * `null` where the value is null. Integers come back as numbers when safe and as bigints
 * otherwise; timestamps as ISO 8601 UTC strings (`2024-05-01T10:30:00.123Z`, six fraction
 * digits when the microseconds are not zero); dates as `YYYY-MM-DD`; JSON parsed.
 * Throws a `ParquetFileError` for bytes it cannot read.
 */
export async function decodeParquet(bytes: Uint8Array): Promise<Row[]> {
  const metadata = readFooter(bytes);
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  const file = whole ? (bytes.buffer as ArrayBuffer) : (bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
  return readRows(file, metadata, summarize(metadata).columns);
}

/** A stored file read by byte ranges, so that a partial read fetches only the parts it needs. */
export interface RangeReadableFile {
  byteLength: number;
  /** Bytes `start` (included) to `end` (excluded). */
  slice(start: number, end?: number): Promise<ArrayBuffer>;
}

/** The first rows of a Parquet file, with its columns and row count. */
export interface ParquetHead extends ParquetFileSummary {
  rows: Row[];
}

/**
 * The first `limit` rows of a Parquet file, decoded as `decodeParquet` does, reading only
 * the footer and the row groups that hold them, and at most `maxReadBytes` of the file
 * (a `ParquetFileError` past that).
 */
export async function readParquetHead(file: RangeReadableFile, limit: number, maxReadBytes: number): Promise<ParquetHead> {
  // The file may come from a hostile worker: a footer that claims gigabytes, or one huge row
  // group. Every fetch counts against the budget before it is made.
  let read = 0;
  const budgeted: RangeReadableFile = {
    byteLength: file.byteLength,
    slice: (start, end = file.byteLength) => {
      read += Math.max(0, end - start);
      if (read > maxReadBytes) {
        return Promise.reject(new ParquetFileError(`Reading the first ${limit} rows needs more than ${maxReadBytes} bytes of the file (its row groups are too large); download it instead.`));
      }
      return file.slice(start, end);
    },
  };
  const buffered = cachedAsyncBuffer(budgeted);
  let metadata: FileMetaData;
  try {
    metadata = await parquetMetadataAsync(buffered);
  } catch (error) {
    if (error instanceof ParquetFileError) throw error;
    throw new ParquetFileError(`Not a readable Parquet file (${(error as Error).message}).`, { cause: error });
  }
  const summary = summarize(metadata);
  const rows = await readRows(buffered, metadata, summary.columns, Math.min(limit, summary.row_count));
  return { ...summary, rows };
}

async function readRows(file: AsyncBuffer, metadata: FileMetaData, columns: StoredColumn[], rowEnd?: number): Promise<Row[]> {
  let rows: Row[];
  try {
    rows = await parquetReadObjects({ file, metadata, parsers: PARSERS, ...(rowEnd === undefined ? {} : { rowStart: 0, rowEnd }) });
  } catch (error) {
    if (error instanceof ParquetFileError) throw error;
    throw new ParquetFileError(`The Parquet file cannot be read (${(error as Error).message}).`, { cause: error });
  }
  const elements = new Map(metadata.schema.slice(1).map((element) => [element.name, element]));
  for (const { name, type } of columns) {
    if (type === 'integer') {
      for (const row of rows) {
        const value = row[name];
        if (typeof value === 'bigint' && value >= -Number.MAX_SAFE_INTEGER && value <= Number.MAX_SAFE_INTEGER) row[name] = Number(value);
      }
    } else if (type === 'json' && elements.get(name)?.converted_type !== 'JSON') {
      for (const row of rows) {
        const value = row[name];
        if (typeof value === 'string') row[name] = parseJsonCell(value, name);
      }
    }
  }
  return rows;
}

function parseJsonCell(text: string, column: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ParquetFileError(`Column "${column}" holds text that is not JSON.`, { cause: error });
  }
}
