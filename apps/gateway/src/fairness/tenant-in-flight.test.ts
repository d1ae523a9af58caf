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
