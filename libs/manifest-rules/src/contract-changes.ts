import { columnSetsDiffer } from './column-sets.ts';
import type { ColumnSpec, ManifestV1 } from '@envengine/contracts';
import { quoted } from '@envengine/contracts';
import { manifestPath, type ValidationError, type ValidationWarning } from './validation-issue.ts';

/**
 * Keys of assets, in `next`'s order, that exist in both manifests and whose sets of
 * (column name, type, nullable) differ; an asset without a schema has the empty set.
 * New assets are not changes, and with no active manifest nothing has changed.
 */
export function changedAssetKeys(active: ManifestV1 | null, next: ManifestV1): string[] {
  if (active === null) return [];
  const activeColumns = new Map<string, readonly ColumnSpec[]>();
  for (const asset of active.assets) {
    if (!activeColumns.has(asset.key)) activeColumns.set(asset.key, asset.schema?.columns ?? []);
  }
  const changed: string[] = [];
  const seen = new Set<string>();
  for (const asset of next.assets) {
    // A duplicated key is a `duplicate_asset` error; its first declaration is the one compared.
    if (seen.has(asset.key)) continue;
    seen.add(asset.key);
    const before = activeColumns.get(asset.key);
    if (before !== undefined && columnSetsDiffer(before, asset.schema?.columns ?? [])) changed.push(asset.key);
  }
  return changed;
}

/** Keys listed more than once in `allow_contract_changes`, reported at each later index. */
export function allowListDuplicateErrors(allowContractChanges: readonly string[]): ValidationError[] {
  const seen = new Set<string>();
  const errors: ValidationError[] = [];
  allowContractChanges.forEach((key, index) => {
    if (!seen.has(key)) {
      seen.add(key);
      return;
    }
    errors.push({
      code: 'allow_contract_changes_duplicate',
      path: `allow_contract_changes.${index}`,
      message: `Asset key ${quoted(key)} is listed more than once in allow_contract_changes.`,
    });
  });
  return errors;
}

export interface ContractFindings {
  errors: ValidationError[];
  warnings: ValidationWarning[];
}

/**
 * What the changed assets mean for this ingest: in a strict environment each must be
 * allowed, elsewhere each is a warning; and every allowed key must name a changed asset.
 */
export function contractFindings(
  manifest: ManifestV1,
  changedAssets: readonly string[],
  strict: boolean,
  allowContractChanges: readonly string[],
): ContractFindings {
  const errors: ValidationError[] = [];
  const warnings: ValidationWarning[] = [];
  const changed = new Set(changedAssets);
  const allowed = new Set(allowContractChanges);
  const reported = new Set<string>();
  manifest.assets.forEach((asset, index) => {
    if (!changed.has(asset.key) || reported.has(asset.key)) return;
    reported.add(asset.key);
    const path = manifestPath('assets', index, 'schema');
    if (!strict) {
      warnings.push({
        code: 'contract_changed',
        path,
        message: `Asset ${quoted(asset.key)} declares a different set of columns than the active deployment.`,
      });
    } else if (!allowed.has(asset.key)) {
      errors.push({
        code: 'contract_change_not_allowed',
        path,
        message: `Asset ${quoted(asset.key)} changes its declared columns, which this strict environment accepts only when the key is listed in allow_contract_changes.`,
      });
    }
  });

  // Reported once per key, at its first index; repeats are `allow_contract_changes_duplicate`.
  const listed = new Set<string>();
  allowContractChanges.forEach((key, index) => {
    if (listed.has(key)) return;
    listed.add(key);
    if (changed.has(key)) return;
    errors.push({
      code: 'allow_contract_changes_not_changed',
      path: `allow_contract_changes.${index}`,
      message: `Asset key ${quoted(key)} is listed in allow_contract_changes, but no asset with that key changed its declared columns.`,
    });
  });
  return { errors, warnings };
}
