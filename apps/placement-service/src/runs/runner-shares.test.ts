import { describe, expect, it } from 'vitest';
import { pickFairly, tenantSlotCap } from './runner-shares.ts';

const ids = (prefix: string, count: number, from = 0) => Array.from({ length: count }, (_, index) => `att_${prefix}${String(from + index).padStart(3, '0')}`);

describe('pickFairly', () => {
  it("gives a freed slot to the tenant holding the fewest, however long another tenant's backlog", () => {
    // A holds every slot and has 50 more waiting (older than B's); B has one waiting.
    const picks = pickFairly([{ tenantId: 'a', ids: ids('0', 50) }, { tenantId: 'b', ids: ids('9', 1) }], new Map([['a', 3]]), 1, null);
    expect(picks).toEqual([{ tenantId: 'b', attemptId: 'att_9000' }]);
  });

  it('fills free slots in turn across tenants, the oldest attempt first among tenants holding as many', () => {
    const picks = pickFairly([{ tenantId: 'a', ids: ids('1', 5) }, { tenantId: 'b', ids: ids('2', 2) }, { tenantId: 'c', ids: ids('3', 1) }], new Map(), 6, null);
    expect(picks.map((pick) => pick.attemptId)).toEqual(['att_1000', 'att_2000', 'att_3000', 'att_1001', 'att_2001', 'att_1002']);
  });

  it('evens out slots already held before it alternates', () => {
    const picks = pickFairly([{ tenantId: 'a', ids: ids('1', 5) }, { tenantId: 'b', ids: ids('2', 5) }], new Map([['b', 2]]), 4, null);
    expect(picks.map((pick) => pick.tenantId)).toEqual(['a', 'a', 'a', 'b']);
  });

  it('gives no tenant more than maxPerTenant, leaving slots free rather than over it', () => {
    const picks = pickFairly([{ tenantId: 'a', ids: ids('1', 10) }, { tenantId: 'b', ids: ids('2', 1) }], new Map([['a', 1]]), 5, 2);
    expect(picks).toEqual([{ tenantId: 'b', attemptId: 'att_2000' }, { tenantId: 'a', attemptId: 'att_1000' }]);
  });

  it('picks nothing without free slots or waiting attempts', () => {
    expect(pickFairly([{ tenantId: 'a', ids: ids('1', 3) }], new Map(), 0, null)).toEqual([]);
    expect(pickFairly([], new Map([['a', 1]]), 3, null)).toEqual([]);
  });
});

describe('tenantSlotCap', () => {
  it("keeps one of the runner's slots from any one tenant by default, and never caps below one", () => {
    expect(tenantSlotCap(4, undefined)).toBe(3);
    expect(tenantSlotCap(16, undefined)).toBe(15);
    expect(tenantSlotCap(1, undefined)).toBe(1);
    expect(tenantSlotCap(Infinity, undefined)).toBeNull();
  });

  it("takes the operator's number as given, and `all` for no cap beyond the fair share", () => {
    expect(tenantSlotCap(4, 2)).toBe(2);
    expect(tenantSlotCap(4, 8)).toBe(8);
    expect(tenantSlotCap(4, 'all')).toBeNull();
  });

  it('with the default cap, a tenant alone takes all but one slot, and a newcomer takes that one at once', () => {
    const alone = pickFairly([{ tenantId: 'a', ids: ids('1', 10) }], new Map(), 4, tenantSlotCap(4, undefined));
    expect(alone).toHaveLength(3);
    const newcomer = pickFairly([{ tenantId: 'a', ids: ids('1', 7, 3) }, { tenantId: 'b', ids: ids('2', 1) }], new Map([['a', 3]]), 1, tenantSlotCap(4, undefined));
    expect(newcomer).toEqual([{ tenantId: 'b', attemptId: 'att_2000' }]);
  });
});
