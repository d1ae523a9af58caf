import {
  assetRemovedWarnings,
  bindingErrors,
  dependencyErrors,
  duplicateAssetErrors,
  entryErrors,
  firstIndexByKey,
  readOnlyBindingWarnings,
} from './asset-checks.ts';
import { allowListDuplicateErrors, changedAssetKeys, contractFindings } from './contract-changes.ts';
import { parseManifestShape } from './manifest-shape.ts';
import { jobErrors, scheduleErrors } from './schedule-checks.ts';
import {
  ValidationErrorCode,
  ValidationWarningCode,
  type ManifestValidation,
  type ValidationContext,
  type ValidationError,
  type ValidationIssue,
  type ValidationWarning,
} from './validation-issue.ts';

/**
 * Validates an ingest's manifest against the environment and bundle it is for
 * (DESIGN.md §5 "Ingest"). Pure and deterministic, so it can run inside a workflow, and
 * it never throws: whatever `manifest` is, the answer lists what is wrong with it.
 *
 * When the shape is invalid only `manifest_invalid`, `bundle_not_found` and
 * `allow_contract_changes_duplicate` can be reported, since the other checks need a
 * parsed manifest. Every other check reports every problem it finds. Issues are ordered
 * by code (the order of ValidationErrorCode / ValidationWarningCode), then by manifest order.
 */
export function validateManifest(manifest: unknown, context: ValidationContext): ManifestValidation {
  const shape = parseManifestShape(manifest);
  // Lists of findings, joined at the end: spreading a huge list into push() would throw.
  const errorLists: ValidationError[][] = [shape.errors];
  const warningLists: ValidationWarning[][] = [];
  let changedAssets: string[] = [];

  if (context.bundleEntries === null) {
    errorLists.push([
      {
        code: 'bundle_not_found',
        path: 'bundle_ref',
        message: 'The bundle named by bundle_ref was not found; upload it before ingesting.',
      },
    ]);
  }
  errorLists.push(allowListDuplicateErrors(context.allowContractChanges));

  if (shape.manifest !== null) {
    const parsed = shape.manifest;
    const assetIndex = firstIndexByKey(parsed);
    errorLists.push(
      duplicateAssetErrors(parsed, assetIndex),
      dependencyErrors(parsed, assetIndex),
      bindingErrors(parsed, context),
      entryErrors(parsed, context.bundleEntries),
      jobErrors(parsed, assetIndex),
      scheduleErrors(parsed),
    );
    warningLists.push(assetRemovedWarnings(parsed, context.activeManifest, assetIndex), readOnlyBindingWarnings(parsed, context));

    changedAssets = changedAssetKeys(context.activeManifest, parsed);
    const contract = contractFindings(parsed, changedAssets, context.strict, context.allowContractChanges);
    errorLists.push(contract.errors);
    warningLists.push(contract.warnings);
  }

  return {
    errors: inCodeOrder(errorLists.flat(), ValidationErrorCode.options),
    warnings: inCodeOrder(warningLists.flat(), ValidationWarningCode.options),
    changedAssets,
    manifest: shape.manifest,
  };
}

/** Stable sort by code: within one code the order the checks found them, i.e. manifest order. */
function inCodeOrder<Code extends string>(issues: ValidationIssue<Code>[], codes: readonly Code[]): ValidationIssue<Code>[] {
  const rank = new Map(codes.map((code, index) => [code, index]));
  return issues.sort((left, right) => rank.get(left.code)! - rank.get(right.code)!);
}
