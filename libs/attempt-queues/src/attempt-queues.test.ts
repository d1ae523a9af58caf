import { describe, expect, it } from 'vitest';
import { attemptJobId, attemptQueueFor, parseAttemptJob, tenantAttemptQueue } from './attempt-queues.ts';
import { poolAclRules } from './pool-acl.ts';

const tenant = 'ten_01m813w5p0mba0fr1w8mf0qssv';

describe('attempt queues', () => {
  it('puts local attempts on the engine queue and remote ones on the tenant queue', () => {
    expect(attemptQueueFor('local', tenant)).toBe('attempts-local');
    expect(attemptQueueFor('remote', tenant)).toBe(`attempts-${tenant}`);
  });

  it('refuses a tenant id that could widen an ACL key pattern', () => {
    for (const bad of ['ten_*', 'ten_a:b', '', `${tenant}*`]) expect(() => tenantAttemptQueue(bad)).toThrow();
  });

  it('uses the attempt id as job id, and a new one after a hand-back', () => {
    expect(attemptJobId({ attempt_id: 'att_1', dispatch: 0 })).toBe('att_1');
    expect(attemptJobId({ attempt_id: 'att_1', dispatch: 2 })).toBe('att_1.2');
  });

  it('carries ids only', () => {
    const job = { attempt_id: 'att_01m813w6h15hs4v0df5drka0xx', run_id: 'run_01m813w6h15hs4v0df5drka0xw', tenant_id: tenant, dispatch: 0 };
    expect(parseAttemptJob(job)).toEqual(job);
    expect(() => parseAttemptJob({ ...job, secret: 'x' })).toThrow();
  });

  it("limits a pool user to its tenant's keys and channels, without KEYS or SCAN", () => {
    const rules = poolAclRules(tenant);
    expect(rules.filter((rule) => rule.startsWith('~') || rule.startsWith('&'))).toEqual([
      `~envengine:attempts-${tenant}:*`,
      `&envengine:attempts-${tenant}:*`,
    ]);
    expect(rules).toEqual(expect.arrayContaining(['-@all', '-@dangerous', '-keys', '-scan']));
    // Nothing re-grants every key or every command after the restrictions.
    expect(rules).not.toContain('allkeys');
    expect(rules).not.toContain('+@all');
  });
});
