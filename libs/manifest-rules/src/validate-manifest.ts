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
import { parseManifestShape, pathsOverlap, salvageManifest } from './manifest-shape.ts';
import type { ManifestV1 } from '@envengine/contracts';
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
 * (docs/design.md#ingest). Pure and deterministic, so it can run inside a workflow, and
 * it never throws: whatever `manifest` is, the answer lists what is wrong with it.
 *
 * Every problem is reported in one pass: when the shape is invalid, the checks of
 * references (deps, bindings, entries, jobs, schedules and their cron) still run on what
 * parses (`salvageManifest`), and only the contract checks, which compare whole schemas,
 * wait for a valid shape. Every check reports every problem it finds. Issues are ordered
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

  if (shape.manifest === null) {
    // One pass: what can still be checked is, and a finding where a shape error already is, is not repeated.
    const salvaged = shape.errors.length <= MAX_SHAPE_ERRORS_TO_SALVAGE ? salvageManifest(manifest) : null;
    if (salvaged !== null) {
      const shapePaths = shape.errors.map((error) => error.path);
      errorLists.push(referenceErrors(salvaged, context).filter((error) => !shapePaths.some((path) => pathsOverlap(path, error.path))));
    }
  } else {
    const parsed = shape.manifest;
    const assetIndex = firstIndexByKey(parsed);
    errorLists.push(referenceErrors(parsed, context));
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

/**
 * Past this many shape errors the other checks are not run on what is left: the filter
 * against them is quadratic, and such a manifest is not a few typos.
 */
const MAX_SHAPE_ERRORS_TO_SALVAGE = 1000;

/** The checks of assets, bindings, entries, jobs and schedules against each other and the environment. */
function referenceErrors(manifest: ManifestV1, context: ValidationContext): ValidationError[] {
  const assetIndex = firstIndexByKey(manifest);
  return [
    duplicateAssetErrors(manifest, assetIndex),
    dependencyErrors(manifest, assetIndex),
    bindingErrors(manifest, context),
    entryErrors(manifest, context.bundleEntries),
    jobErrors(manifest, assetIndex),
    scheduleErrors(manifest),
  ].flat();
}

/** Stable sort by code: within one code the order the checks found them, i.e. manifest order. */
function inCodeOrder<Code extends string>(issues: ValidationIssue<Code>[], codes: readonly Code[]): ValidationIssue<Code>[] {
  const rank = new Map(codes.map((code, index) => [code, index]));
  return issues.sort((left, right) => rank.get(left.code)! - rank.get(right.code)!);
}
