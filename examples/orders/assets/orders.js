// Clean orders: refunds (negative amounts) dropped, every amount in the reporting currency
// of the "warehouse" binding, and the order day.
export default async (ctx) => {
  const { reporting_currency: reporting = 'EUR', rates = {} } = await ctx.connection('warehouse');
  const raw = await ctx.read('raw_orders');
  const rateOf = (currency) => {
    if (currency === reporting) return 1;
    const rate = rates[`${currency}_${reporting}`];
    if (typeof rate !== 'number') throw new Error(`no rate ${currency}_${reporting} in the warehouse binding's config.rates`);
    return rate;
  };
  const rows = raw
    .filter((row) => row.amount >= 0)
    .map((row) => ({
      id: row.id,
      customer: row.customer,
      amount: Math.round(row.amount * rateOf(row.currency) * 100) / 100,
      day: new Date(row.ordered_at).toISOString().slice(0, 10),
    }));
  ctx.log(`kept ${rows.length} of ${raw.length} orders, amounts in ${reporting}`);
  await ctx.emit(rows);
};
