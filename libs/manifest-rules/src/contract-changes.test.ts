import { describe, expect, it } from 'vitest';
import { changedAssetKeys } from './contract-changes.ts';
import { ManifestV1 } from '@envengine/contracts';

const asset = (key: string, columns?: Array<{ name: string; type: string; nullable?: boolean }>) => ({
  key,
  binding: 'warehouse',
  entry: `${key}.js`,
  ...(columns === undefined ? {} : { schema: { columns } }),
});
const manifest = (...assets: ReturnType<typeof asset>[]) => ManifestV1.parse({ version: 1, assets });

describe('changedAssetKeys', () => {
  const active = manifest(asset('a', [{ name: 'id', type: 'integer' }]), asset('b'), asset('gone', [{ name: 'x', type: 'json' }]));

  it('is empty without an active manifest', () => {
    expect(changedAssetKeys(null, manifest(asset('a', [{ name: 'id', type: 'string' }])))).toEqual([]);
  });

  it('lists assets present in both whose column sets differ, in the new order', () => {
    const next = manifest(
      asset('new', [{ name: 'id', type: 'integer' }]),
      asset('b', [{ name: 'id', type: 'integer' }]),
      asset('a', [{ name: 'id', type: 'integer', nullable: true }]),
    );
    expect(changedAssetKeys(active, next)).toEqual(['b', 'a']);
  });

  it('treats an absent schema and an empty column list alike', () => {
    expect(changedAssetKeys(manifest(asset('b', [])), manifest(asset('b')))).toEqual([]);
  });

  it('compares only the first declaration of a duplicated key', () => {
    const next = manifest(asset('a', [{ name: 'id', type: 'integer' }]), asset('a', [{ name: 'other', type: 'date' }]));
    expect(changedAssetKeys(active, next)).toEqual([]);
  });
});
