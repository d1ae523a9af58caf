// The row codec of the sandboxed asset child (asset-child.ts), bundled as a file of its
// own beside it and imported at the child's first emit or read: evaluating Parquet's
// encoder and decoder is most of the child's own start-up, and an asset that neither
// emits nor reads never needs them (issue 42: an empty run's CPU).
export { decodeParquet, ParquetRowWriter } from '@envengine/materialization-storage/codec';
