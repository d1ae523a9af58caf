import { describe, expect, it } from 'vitest';
import { schedulesOfManifest } from './schedules.ts';

describe('schedulesOfManifest', () => {
  it('reads the schedules of a stored manifest, a missing zone as UTC (the manifest rules\' default)', () => {
    const manifest = {
      version: 1,
      schedules: [
        { name: 'nightly', job: 'refresh', cron: '0 2 * * *' },
        { name: 'berlin', job: 'refresh', cron: '0 2 * * *', timezone: 'Europe/Berlin' },
      ],
    };
    expect(schedulesOfManifest(manifest)).toEqual([
      { name: 'nightly', job: 'refresh', cron: '0 2 * * *', timezone: 'UTC' },
      { name: 'berlin', job: 'refresh', cron: '0 2 * * *', timezone: 'Europe/Berlin' },
    ]);
  });

  it('answers none for a manifest without schedules', () => {
    expect(schedulesOfManifest({ version: 1, assets: [] })).toEqual([]);
  });
});
