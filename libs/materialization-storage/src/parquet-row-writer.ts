// Rows encoded as one Parquet file, row group by row group, each group's bytes handed on
// as soon as it is written. The asset's sandboxed child runs it (issue 34): a tenant's
// rows are checked and encoded where its own memory cap applies, and only bytes reach
// the worker. It uses no Node built-in, so the child's bundle can take it.
import type { DeclaredSchema, Row } from './declared-schema.ts';
import type { FlatParquetWriter } from './flat-parquet-writer.ts';
import { inferSchema } from './infer-schema.ts';
import { checkRowsPerGroup, parquetFileWriter, ROWS_PER_GROUP } from './parquet-codec.ts';
import { checkRows } from './row-check.ts';

export interface ParquetRowWriterOptions {
  /** The declared schema; null takes the columns of the first rows written (`inferSchema`). */
  schema: DeclaredSchema | null;
  /** Receives the file's bytes in order (a copy each time); the next row group waits for its promise. */
  onBytes: (bytes: Uint8Array) => Promise<void> | void;
  rowsPerGroup?: number;
}

/**
 * One Parquet file of checked rows. `write` must not be called again before the last
 * call settled; a `RowSchemaError` names the row by its index over the whole file.
 */
export class ParquetRowWriter {
  private rowCount = 0;
  private schema: DeclaredSchema | null;
  private file: FlatParquetWriter | undefined;
  private readonly rowsPerGroup: number;

  constructor(private readonly options: ParquetRowWriterOptions) {
    this.schema = options.schema;
    this.rowsPerGroup = options.rowsPerGroup ?? ROWS_PER_GROUP;
    checkRowsPerGroup(this.rowsPerGroup);
  }

  /** Checks rows against the schema, then encodes them in row groups of at most `rowsPerGroup`. */
  async write(rows: readonly Row[]): Promise<void> {
    if (rows.length === 0) return;
    this.schema ??= inferSchema(rows.slice(0, this.rowsPerGroup));
    checkRows(this.schema, rows, this.rowCount);
    const file = this.fileOf(this.schema);
    for (let start = 0; start < rows.length; start += this.rowsPerGroup) {
      file.writeRowGroup(rows, start, Math.min(rows.length, start + this.rowsPerGroup));
      await this.options.onBytes(file.takeBytes());
    }
    this.rowCount += rows.length;
  }

  /** Writes the footer and hands on the last bytes; returns the file's row count. */
  async finish(): Promise<{ rowCount: number }> {
    // A file of no rows is still a file: one of no row groups (an empty schema is refused).
    const file = this.fileOf(this.schema ?? { columns: [] });
    file.finish();
    await this.options.onBytes(file.takeBytes());
    return { rowCount: this.rowCount };
  }

  private fileOf(schema: DeclaredSchema): FlatParquetWriter {
    this.file ??= parquetFileWriter(schema);
    return this.file;
  }
}
