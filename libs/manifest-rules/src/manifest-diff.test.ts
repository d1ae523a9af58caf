import { describe, expect, it } from 'vitest';
import { ManifestV1 } from '@envengine/contracts';
import { manifestDiff } from './manifest-diff.ts';

const manifest = (fields: { assets: unknown[]; jobs?: unknown[]; schedules?: unknown[] }) => ManifestV1.parse({ version: 1, ...fields });
const asset = (key: string, extra: Record<string, unknown> = {}) => ({ key, binding: 'warehouse', entry: `assets/${key}.js`, ...extra });
const columns = (...specs: Array<[string, string, boolean?]>) => ({ schema: { columns: specs.map(([name, type, nullable]) => ({ name, type, ...(nullable === undefined ? {} : { nullable }) })) } });
const files = (entries: Record<string, string>) => new Map(Object.entries(entries));

describe('manifestDiff', () => {
  const base = manifest({
    assets: [asset('orders', columns(['id', 'integer'], ['amount', 'integer'], ['note', 'string'])), asset('gone'), asset('same', { deps: ['orders'] })],
    jobs: [{ name: 'refresh', assets: ['orders'] }, { name: 'old', assets: ['gone'] }],
    schedules: [{ name: 'nightly', job: 'refresh', cron: '0 2 * * *', timezone: 'UTC' }],
  });
  const head = manifest({
    assets: [
      asset('orders', { ...columns(['id', 'integer'], ['amount', 'number', true], ['email', 'string']), timeout_seconds: 60, entry: 'assets/orders_v2.js' }),
      asset('new', columns(['x', 'json'])),
      asset('same', { deps: ['orders'] }),
    ],
    jobs: [{ name: 'refresh', assets: ['orders', 'new'] }],
    schedules: [{ name: 'nightly', job: 'refresh', cron: '0 3 * * *', timezone: 'UTC' }, { name: 'hourly', job: 'refresh', cron: '0 * * * *', timezone: 'UTC' }],
  });

  it('names added, removed and changed columns, the changed fields, and added and removed assets; an unchanged asset is left out', () => {
    const diff = manifestDiff({ manifest: base, files: new Map() }, { manifest: head, files: new Map() });
    expect(diff.assets).toEqual([
      { key: 'gone', change: 'removed', columns_added: [], columns_removed: [], columns_changed: [], entry: { from: 'assets/gone.js', to: null }, binding: { from: 'warehouse', to: null } },
      { key: 'new', change: 'added', columns_added: [{ name: 'x', type: 'json', nullable: false }], columns_removed: [], columns_changed: [], entry: { from: null, to: 'assets/new.js' }, binding: { from: null, to: 'warehouse' } },
      {
        key: 'orders',
        change: 'changed',
        columns_added: [{ name: 'email', type: 'string', nullable: false }],
        columns_removed: [{ name: 'note', type: 'string', nullable: false }],
        columns_changed: [{ name: 'amount', from: 'integer', to: 'number', nullable: { from: false, to: true } }],
        entry: { from: 'assets/orders.js', to: 'assets/orders_v2.js' },
        timeout_seconds: { from: null, to: 60 },
      },
    ]);
  });

  it('names jobs and schedules added, removed and changed, with the fields that changed', () => {
    const diff = manifestDiff({ manifest: base, files: new Map() }, { manifest: head, files: new Map() });
    expect(diff.jobs).toEqual([
      { name: 'old', change: 'removed', assets: { added: [], removed: ['gone'] } },
      { name: 'refresh', change: 'changed', assets: { added: ['new'], removed: [] } },
    ]);
    expect(diff.schedules).toEqual([
      { name: 'hourly', change: 'added', job: { from: null, to: 'refresh' }, cron: { from: null, to: '0 * * * *' }, timezone: { from: null, to: 'UTC' } },
      { name: 'nightly', change: 'changed', cron: { from: '0 2 * * *', to: '0 3 * * *' } },
    ]);
  });

  it('compares files by content hash', () => {
    const diff = manifestDiff(
      { manifest: base, files: files({ 'a.js': '1', 'b.js': '2', 'gone.js': '3' }) },
      { manifest: base, files: files({ 'a.js': '1', 'b.js': '9', 'new.js': '4' }) },
    );
    expect(diff.files).toEqual({ added: ['new.js'], removed: ['gone.js'], changed: ['b.js'] });
  });

  it('finds nothing between a manifest and itself, and everything added without a base', () => {
    expect(manifestDiff({ manifest: head, files: files({ 'a.js': '1' }) }, { manifest: head, files: files({ 'a.js': '1' }) })).toEqual({
      assets: [],
      jobs: [],
      schedules: [],
      files: { added: [], removed: [], changed: [] },
    });
    const fromNothing = manifestDiff({ manifest: null, files: new Map() }, { manifest: head, files: files({ 'a.js': '1' }) });
    expect(fromNothing.assets.map((item) => [item.key, item.change])).toEqual([['new', 'added'], ['orders', 'added'], ['same', 'added']]);
    expect(fromNothing.files.added).toEqual(['a.js']);
  });

  it('counts a nullability change alone as a changed column', () => {
    const before = manifest({ assets: [asset('a', columns(['id', 'integer']))] });
    const after = manifest({ assets: [asset('a', columns(['id', 'integer', true]))] });
    expect(manifestDiff({ manifest: before, files: new Map() }, { manifest: after, files: new Map() }).assets).toEqual([
      { key: 'a', change: 'changed', columns_added: [], columns_removed: [], columns_changed: [{ name: 'id', from: 'integer', to: 'integer', nullable: { from: false, to: true } }] },
    ]);
  });
});
