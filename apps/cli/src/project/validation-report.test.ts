import { describe, expect, it } from 'vitest';
import { assetOfPath, inFlagTerms } from './validation-report.ts';

describe('assetOfPath', () => {
  const manifest = { assets: [{ key: 'raw_orders' }, { key: 'orders' }] };
  it('names the asset of a manifest path or an allow-list entry, else null', () => {
    expect(assetOfPath('manifest.assets.1.schema', manifest, [])).toBe('orders');
    expect(assetOfPath('manifest.assets.0', manifest, [])).toBe('raw_orders');
    expect(assetOfPath('manifest.assets.7.deps.0', manifest, [])).toBeNull();
    expect(assetOfPath('allow_contract_changes.1', manifest, ['a', 'orders'])).toBe('orders');
    expect(assetOfPath('manifest.schedules.0.cron', manifest, [])).toBeNull();
  });

  it('names flags, not API fields, in what it shows', () => {
    expect(inFlagTerms('accepts it only when the key is listed in allow_contract_changes.')).toBe('accepts it only when the key is listed in --allow-contract-change.');
    expect(inFlagTerms('nothing to change')).toBe('nothing to change');
  });
});
