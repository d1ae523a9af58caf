// The rows of the emit benchmarks (runs, object-storage): one module run by the asset and
// imported by the bench, so both sides make the same rows, and what the bare side encodes.
import { parquetWriteBuffer } from 'hyparquet-writer';

export const EMIT_ROWS = 100_000;

export const ROWS_MODULE = `export const makeRows = (count) => Array.from({ length: count }, (_, i) => ({
  id: i, customer: 'customer-' + (i % 5000), amount: (i % 10000) / 4, paid: i % 3 === 0, region: ['eu', 'us', 'apac', 'latam'][i % 4],
}));`;

/** The asset's declared schema. */
export const WIDE_COLUMNS = [
  { name: 'id', type: 'integer' },
  { name: 'customer', type: 'string' },
  { name: 'amount', type: 'number' },
  { name: 'paid', type: 'boolean' },
  { name: 'region', type: 'string' },
];
const WIDE_PARQUET_TYPES = { id: 'INT64', customer: 'STRING', amount: 'DOUBLE', paid: 'BOOLEAN', region: 'STRING' } as const;

/** The asset that makes the rows and emits them between two log lines the benches time. */
export const WIDE_ASSET = `import { makeRows } from './rows.js';
export default async (ctx) => {
  const rows = makeRows(${EMIT_ROWS});
  ctx.log('emit start');
  await ctx.emit(rows);
  ctx.log('emit done');
};`;

/** `makeRows` of ROWS_MODULE, in this process. */
export async function loadMakeRows(): Promise<(count: number) => Array<Record<string, unknown>>> {
  return ((await import(`data:text/javascript,${encodeURIComponent(ROWS_MODULE)}`)) as { makeRows: (count: number) => Array<Record<string, unknown>> }).makeRows;
}

/** The bare encode: columns built straight from the rows (INT64 as bigints, as the engine's codec converts them), then hyparquet-writer. */
export function encodeWideRows(rows: Array<Record<string, unknown>>): Uint8Array {
  const columnData = Object.entries(WIDE_PARQUET_TYPES).map(([name, type]) => ({
    name,
    type,
    nullable: false,
    data: type === 'INT64' ? rows.map((row) => BigInt(row[name] as number)) : rows.map((row) => row[name]),
  }));
  return new Uint8Array(parquetWriteBuffer({ columnData }));
}
