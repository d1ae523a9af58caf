import { describe, expect, it } from 'vitest';
import { TenantInFlight } from './tenant-in-flight.ts';

describe('TenantInFlight', () => {
  it('gives a tenant at most its limit of slots, and others theirs beside it', () => {
    const inFlight = new TenantInFlight(2);
    const a1 = inFlight.take('a');
    const a2 = inFlight.take('a');
    expect(a1).toBeTypeOf('function');
    expect(a2).toBeTypeOf('function');
    expect(inFlight.take('a')).toBeUndefined();
    expect(inFlight.take('b')).toBeTypeOf('function');
    expect(inFlight.heldBy('a')).toBe(2);
    expect(inFlight.heldBy('b')).toBe(1);
  });

  it('frees a slot at its release, once however often it is released', () => {
    const inFlight = new TenantInFlight(2);
    const first = inFlight.take('a')!;
    inFlight.take('a');
    first();
    first();
    expect(inFlight.heldBy('a')).toBe(1);
    expect(inFlight.take('a')).toBeTypeOf('function');
    expect(inFlight.take('a')).toBeUndefined();
  });

  it('forgets a tenant with nothing in flight', () => {
    const inFlight = new TenantInFlight(3);
    const releases = [inFlight.take('a')!, inFlight.take('b')!, inFlight.take('a')!];
    expect(inFlight.tenants).toBe(2);
    for (const release of releases) release();
    expect(inFlight.tenants).toBe(0);
    expect(inFlight.heldBy('a')).toBe(0);
  });

  it('refuses a limit below one', () => {
    expect(() => new TenantInFlight(0)).toThrow(/at least 1/);
    expect(() => new TenantInFlight(1.5)).toThrow(/at least 1/);
  });
});

describe('TenantInFlight waits', () => {
  it("lets a request over its share wait for one of its own tenant's slots, in arrival order", async () => {
    const inFlight = new TenantInFlight(1);
    const first = (await inFlight.acquire('a', 1000))!;
    const order: string[] = [];
    const second = inFlight.acquire('a', 1000).then((release) => (order.push('second'), release));
    const third = inFlight.acquire('a', 1000).then((release) => (order.push('third'), release));
    // Another tenant does not wait behind them.
    expect(await inFlight.acquire('b', 0)).toBeTypeOf('function');
    first();
    (await second)!();
    (await third)!();
    expect(order).toEqual(['second', 'third']);
    expect(inFlight.heldBy('a')).toBe(0);
  });

  it('refuses a request whose wait ends without a slot, and at once without a wait', async () => {
    const inFlight = new TenantInFlight(1);
    const held = inFlight.take('a')!;
    expect(await inFlight.acquire('a', 0)).toBeUndefined();
    expect(await inFlight.acquire('a', 20)).toBeUndefined();
    // The refused waiter is gone: the release frees the slot rather than handing it on.
    held();
    expect(inFlight.heldBy('a')).toBe(0);
    expect(inFlight.tenants).toBe(0);
  });

  it('does not let a newcomer overtake the requests already waiting', async () => {
    const inFlight = new TenantInFlight(1);
    const held = inFlight.take('a')!;
    const waiting = inFlight.acquire('a', 1000);
    held();
    // The slot went to the waiting request, not to the next arrival.
    expect(inFlight.take('a')).toBeUndefined();
    (await waiting)!();
    expect(inFlight.take('a')).toBeTypeOf('function');
  });
});
