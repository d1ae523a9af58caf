// Pure rules for version-1 manifests, shared by the ingest workflow and the activation
// re-check: no I/O, no clock, no randomness, no module state.
export {
  AssetSchema,
  ColumnSpec,
  ColumnType,
  ManifestAsset,
  ManifestJob,
  ManifestSchedule,
  ManifestV1,
  type ColumnSpecInput,
  type ManifestV1Input,
} from './manifest.schema.ts';
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
