// Pure rules for version-1 manifests, shared by the ingest workflow and the activation
// re-check: no I/O, no clock, no randomness, no module state. The manifest's shape itself
// (ManifestV1 and its parts) is a contract: `@envengine/contracts`.
export {
  ValidationErrorCode,
  ValidationIssue,
  ValidationWarningCode,
  type BindingMode,
  type ManifestValidation,
  type ValidationContext,
  type ValidationError,
  type ValidationWarning,
} from './validation-issue.ts';
export { validateManifest } from './validate-manifest.ts';
export { changedAssetKeys } from './contract-changes.ts';
export { columnSetsDiffer, storedColumnsMismatch } from './column-sets.ts';
export { timeZoneProblem } from './time-zone.ts';
export { manifestDiff, type DiffSide } from './manifest-diff.ts';
