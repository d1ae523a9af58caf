// Rows encoded as one Parquet file, row group by row group, each group's bytes handed on
// as soon as it is written. The asset's sandboxed child runs it (issue 34): a tenant's
// rows are checked and encoded where its own memory cap applies, and only bytes reach
// the worker. It uses no Node built-in, so the child's bundle can take it.
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { DeclaredSchema, Row } from './declared-schema.ts';
import { inferSchema } from './infer-schema.ts';
import { parquetColumnData, parquetSchemaOf, PARQUET_WRITE_OPTIONS } from './parquet-codec.ts';
import { checkRows } from './row-check.ts';

/** Rows per row group: a group's columns and bytes are what the writer holds beside the rows. */
export const ROWS_PER_GROUP = 65_536;

export interface ParquetRowWriterOptions {
  /** The declared schema; null takes the columns of the first rows written (`inferSchema`). */
  schema: DeclaredSchema | null;
  /** Receives the file's bytes in order (a copy each time); the next row group waits for its promise. */
  onBytes: (bytes: Uint8Array) => Promise<void> | void;
  rowsPerGroup?: number;
}

/** A ByteWriter that hands its bytes on after each row group, so it holds one group at most. */
class HandingWriter extends ByteWriter {
  constructor(private readonly onBytes: (bytes: Uint8Array) => Promise<void> | void) {
    super(1024 * 1024);
  }

  /** ParquetWriter awaits this before it encodes the next row group. */
  flush(): Promise<void> | void {
    if (this.index === 0) return undefined;
    const bytes = new Uint8Array(this.buffer.slice(0, this.index));
    this.index = 0;
    return this.onBytes(bytes);
  }

  override finish(): void {
    // ParquetWriter.finish returns this; the last bytes are handed on by ParquetRowWriter.finish.
  }
}

/**
 * One Parquet file of checked rows. `write` must not be called again before the last
 * call settled; a `RowSchemaError` names the row by its index over the whole file.
 */
export class ParquetRowWriter {
  private rowCount = 0;
  private schema: DeclaredSchema | null;
  private parquet: ParquetWriter | undefined;
  private bytesOut: HandingWriter | undefined;
  private readonly rowsPerGroup: number;

  constructor(private readonly options: ParquetRowWriterOptions) {
    this.schema = options.schema;
    this.rowsPerGroup = options.rowsPerGroup ?? ROWS_PER_GROUP;
  }

  /** Checks rows against the schema, then encodes them in row groups of at most `rowsPerGroup`. */
  async write(rows: readonly Row[]): Promise<void> {
    if (rows.length === 0) return;
    this.schema ??= inferSchema(rows.slice(0, this.rowsPerGroup));
    checkRows(this.schema, rows, this.rowCount);
    const writer = this.writer(this.schema);
    for (let start = 0; start < rows.length; start += this.rowsPerGroup) {
      const group = rows.slice(start, start + this.rowsPerGroup);
      await writer.write({ ...PARQUET_WRITE_OPTIONS, columnData: parquetColumnData(this.schema, group), rowGroupSize: group.length });
    }
    this.rowCount += rows.length;
  }

  /** Writes the footer and hands on the last bytes; returns the file's row count. */
  async finish(): Promise<{ rowCount: number }> {
    // A file of no rows is still a file: one of no row groups (an empty schema is refused by parquetSchemaOf).
    const writer = this.writer(this.schema ?? { columns: [] });
    await writer.finish();
    await this.bytesOut!.flush();
    return { rowCount: this.rowCount };
  }

  private writer(schema: DeclaredSchema): ParquetWriter {
    if (this.parquet) return this.parquet;
    this.bytesOut = new HandingWriter(this.options.onBytes);
    this.parquet = new ParquetWriter({ writer: this.bytesOut, ...parquetSchemaOf(schema) });
    return this.parquet;
  }
}
