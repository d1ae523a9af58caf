import { describe, expect, it } from 'vitest';
import { ManifestV1 } from './manifest.ts';

describe('ManifestV1', () => {
  it('parses the example of docs/design.md#manifest and applies the defaults', () => {
    const parsed = ManifestV1.parse({
      version: 1,
      assets: [
        {
          key: 'raw_orders',
          binding: 'warehouse',
          entry: 'assets/raw_orders.js',
          schema: { columns: [{ name: 'id', type: 'integer' }, { name: 'amount', type: 'number', nullable: true }] },
        },
      ],
      jobs: [{ name: 'refresh', assets: ['raw_orders'] }],
      schedules: [{ name: 'nightly', job: 'refresh', cron: '0 2 * * *' }],
    });
    expect(parsed).toEqual({
      version: 1,
      assets: [
        {
          key: 'raw_orders',
          binding: 'warehouse',
          entry: 'assets/raw_orders.js',
          deps: [],
          schema: {
            columns: [
              { name: 'id', type: 'integer', nullable: false },
              { name: 'amount', type: 'number', nullable: true },
            ],
          },
        },
      ],
      jobs: [{ name: 'refresh', assets: ['raw_orders'] }],
      schedules: [{ name: 'nightly', job: 'refresh', cron: '0 2 * * *', timezone: 'UTC' }],
    });
  });

  it('leaves jobs and schedules out when the manifest does', () => {
    expect(ManifestV1.parse({ version: 1, assets: [] })).toEqual({ version: 1, assets: [] });
  });

  it.each([
    ['an unknown field in a column', { name: 'id', type: 'integer', default: 0 }],
    ['a non-boolean nullable', { name: 'id', type: 'integer', nullable: 'yes' }],
    ['an empty column name', { name: '', type: 'integer' }],
  ])('rejects %s', (_, column) => {
    const manifest = { version: 1, assets: [{ key: 'a', binding: 'b', entry: 'a.js', schema: { columns: [column] } }] };
    expect(ManifestV1.safeParse(manifest).success).toBe(false);
  });
});
