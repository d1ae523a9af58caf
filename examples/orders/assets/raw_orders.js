// Loads the orders export that ships in the bundle (data/orders.csv). The "warehouse"
// binding says where the source system is; its `api_key` setting is a secret reference,
// resolved by the worker: it is used, never logged.
import { readFile } from 'node:fs/promises';
import { parseCsv } from '../lib/csv.js';

export default async (ctx) => {
  const warehouse = await ctx.connection('warehouse');
  if (typeof warehouse.api_key !== 'string' || warehouse.api_key.length === 0) {
    throw new Error('the "warehouse" binding needs its api_key secret (envctl bindings set warehouse --secret-ref api_key=orders-api-key)');
  }
  const source = warehouse.source ?? 'data/orders.csv';
  const text = await readFile(new URL(`../${source}`, import.meta.url), 'utf8');
  const rows = parseCsv(text).map((row) => ({
    id: Number(row.id),
    customer: row.customer,
    amount: Number(row.amount),
    currency: row.currency,
    ordered_at: row.ordered_at,
  }));
  ctx.log(`loaded ${rows.length} orders from ${source}`);
  await ctx.emit(rows);
};
