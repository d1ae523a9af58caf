// What the sandboxed asset child takes of this lib (`@envengine/materialization-storage/codec`):
// checking, encoding and decoding rows, nothing that touches files or the network.
export { type DeclaredSchema, type Row } from './declared-schema.ts';
export { RowSchemaError, checkRows } from './row-check.ts';
export { inferSchema } from './infer-schema.ts';
export { decodeParquet, ParquetFileError } from './parquet-codec.ts';
export { ROWS_PER_GROUP } from './parquet-codec.ts';
export { ParquetRowWriter } from './parquet-row-writer.ts';
