// Revenue per day, from the clean orders.
export default async (ctx) => {
  const orders = await ctx.read('orders');
  const byDay = new Map();
  for (const order of orders) {
    const day = order.day instanceof Date ? order.day.toISOString().slice(0, 10) : String(order.day);
    const total = byDay.get(day) ?? { day, orders: 0, revenue: 0 };
    total.orders += 1;
    total.revenue = Math.round((total.revenue + order.amount) * 100) / 100;
    byDay.set(day, total);
  }
  const rows = [...byDay.values()].sort((a, b) => a.day.localeCompare(b.day));
  for (const row of rows) ctx.log(`${row.day}: ${row.orders} order${row.orders === 1 ? '' : 's'}, revenue ${row.revenue}`);
  await ctx.emit(rows);
};
