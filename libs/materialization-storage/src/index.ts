export { COLUMN_TYPES, type ColumnType, type DeclaredColumn, type DeclaredSchema, type Row } from './declared-schema.ts';
export { RowSchemaError, checkRows } from './row-check.ts';
export { inferSchema } from './infer-schema.ts';
export * from './parquet-codec.ts';
export * from './parquet-row-writer.ts';
export * from './storage-driver.ts';
export * from './materialization.ts';
export * from './s3-storage-driver.ts';
export * from './materialization-upload.ts';
