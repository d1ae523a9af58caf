import { describe, expect, it } from 'vitest';
import { fitStatusLine } from './status-line.ts';

describe('fitStatusLine', () => {
  const queued = 'run_01m818z0eqgapzsmf5hpvc62sx queued · waiting for a worker of the pool · 12.5s';

  it('leaves a line that fits as it is', () => {
    expect(fitStatusLine(queued, 100)).toBe(queued);
    expect(fitStatusLine(queued, queued.length)).toBe(queued);
  });

  it('shortens the middle parts, longest first, and keeps the elapsed time with its unit', () => {
    const fitted = fitStatusLine(queued, 79);
    expect(fitted).toBe('run_01m818z0eqgapzsmf5hpvc62sx queued · waiting for a worker of the po… · 12.5s');
    expect(fitted).toHaveLength(79);
    const running = 'run_01m818z0eqgapzsmf5hpvc62sx running · attempt 1/3 on remote (worker-on-a-long-host-name) · asset daily_revenue (2/3 done) · 102.4s';
    for (const width of [79, 60, 50]) {
      const line = fitStatusLine(running, width);
      expect(line.length, line).toBeLessThanOrEqual(width);
      expect(line).toMatch(/ · 102\.4s$/);
    }
  });

  it('keeps the elapsed time alone on a terminal too narrow for anything else', () => {
    expect(fitStatusLine(queued, 20)).toBe('12.5s');
    expect(fitStatusLine(queued, 3)).toBe('');
  });
});
