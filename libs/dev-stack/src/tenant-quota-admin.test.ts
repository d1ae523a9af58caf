import { describe, expect, it } from 'vitest';
import { effectiveQuotaLimits, DEFAULT_QUOTA_LIMITS } from '@envengine/contracts';
import { parseQuotaAssignments } from './tenant-quota-admin.ts';

describe('quota set arguments', () => {
  it('reads counts and default', () => {
    expect(parseQuotaAssignments(['queued_runs=100', 'bundle_bytes=default', 'environments=0'])).toEqual({ queued_runs: 100, bundle_bytes: null, environments: 0 });
  });

  it.each(['widgets=1', 'environments=-1', 'environments=1.5', 'environments', 'environments=', '=3', 'environments=1e3'])('refuses %s, naming it', (argument) => {
    expect(() => parseQuotaAssignments([argument])).toThrow(`"${argument}" is not <quota>=<count>|default`);
  });

  it('puts a quota set to default back to the engine default', () => {
    expect(effectiveQuotaLimits({ queued_runs: 5, environments: null })).toEqual({ ...DEFAULT_QUOTA_LIMITS, queued_runs: 5 });
  });
});
