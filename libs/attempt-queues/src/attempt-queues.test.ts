import { describe, expect, it } from 'vitest';
import { attemptJobId, attemptQueueFor, isAttemptQueueName, parseAttemptJob, tenantAttemptQueue } from './attempt-queues.ts';

const tenant = 'ten_01m813w5p0mba0fr1w8mf0qssv';

describe('attempt queues', () => {
  it('puts local attempts on the engine queue and remote ones on the tenant queue', () => {
    expect(attemptQueueFor('local', tenant)).toBe('attempts-local');
    expect(attemptQueueFor('remote', tenant)).toBe(`attempts-${tenant}`);
  });

  it('refuses a tenant id that could widen an ACL key pattern', () => {
    for (const bad of ['ten_*', 'ten_a:b', '', `${tenant}*`, `${tenant}:x`, 'ten_01M813W5P0MBA0FR1W8MF0QSSV', `ten_[a-z]${'0'.repeat(21)}`]) {
      expect(() => tenantAttemptQueue(bad)).toThrow();
      expect(() => attemptQueueFor('remote', bad)).toThrow();
    }
  });

  it('knows its queue names and no others', () => {
    expect(isAttemptQueueName('attempts-local')).toBe(true);
    expect(isAttemptQueueName(`attempts-${tenant}`)).toBe(true);
    for (const other of ['attempts-*', `attempts-${tenant}:wait`, 'deployments', `attempts-${tenant.toUpperCase()}`]) expect(isAttemptQueueName(other)).toBe(false);
  });

  it('uses the attempt id as job id, and a new one after a hand-back', () => {
    expect(attemptJobId({ attempt_id: 'att_1', dispatch: 0 })).toBe('att_1');
    expect(attemptJobId({ attempt_id: 'att_1', dispatch: 2 })).toBe('att_1.2');
  });

  it('carries ids only', () => {
    const job = { attempt_id: 'att_01m813w6h15hs4v0df5drka0xx', run_id: 'run_01m813w6h15hs4v0df5drka0xw', tenant_id: tenant, dispatch: 0 };
    expect(parseAttemptJob(job)).toEqual(job);
    expect(() => parseAttemptJob({ ...job, secret: 'x' })).toThrow();
    expect(() => parseAttemptJob({ ...job, tenant_id: 'ten_*' })).toThrow();
    expect(() => parseAttemptJob({ ...job, dispatch: -1 })).toThrow();
    const { run_id: _runId, ...withoutRun } = job;
    expect(() => parseAttemptJob(withoutRun)).toThrow();
  });
});
