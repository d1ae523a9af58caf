import { z } from 'zod';
import type { ManifestV1 } from '@envengine/contracts';

/**
 * Error codes of an ingest validation (docs/design.md#ingest). Errors are reported in
 * this order of codes, and within one code in manifest order.
 */
export const ValidationErrorCode = z.enum([
  'manifest_invalid',
  'duplicate_asset',
  'unknown_dependency',
  'dependency_cycle',
  'unknown_binding',
  'bundle_not_found',
  'entry_not_in_bundle',
  'unknown_job_asset',
  'unknown_schedule_job',
  'invalid_cron',
  'contract_change_not_allowed',
  'allow_contract_changes_duplicate',
  'allow_contract_changes_not_changed',
]);
export type ValidationErrorCode = z.infer<typeof ValidationErrorCode>;

/** Warning codes; warnings never fail an ingest. Same ordering rule as the errors. */
export const ValidationWarningCode = z.enum(['contract_changed', 'asset_removed', 'read_only_binding']);
export type ValidationWarningCode = z.infer<typeof ValidationWarningCode>;

/**
 * One finding. `path` is dot-joined and relative to the ingest request body, where the
 * manifest sits under `manifest` (`manifest.assets.3.deps.0`, `bundle_ref`,
 * `allow_contract_changes.2`); `message` is one sentence naming the offending value.
 */
export const ValidationIssue = z.object({
  code: z.union([ValidationErrorCode, ValidationWarningCode]),
  path: z.string(),
  message: z.string(),
});
export type ValidationIssue<Code extends string = ValidationErrorCode | ValidationWarningCode> = {
  code: Code;
  path: string;
  message: string;
};
export type ValidationError = ValidationIssue<ValidationErrorCode>;
export type ValidationWarning = ValidationIssue<ValidationWarningCode>;

export type BindingMode = 'live' | 'read_only';

/** What validation needs to know besides the manifest; gathered by activities beforehand. */
export interface ValidationContext {
  /** The environment's bindings by connection name. */
  bindings: ReadonlyMap<string, { mode: BindingMode }>;
  /** File names in the bundle named by `bundle_ref`; null when that bundle was not found. */
  bundleEntries: ReadonlySet<string> | null;
  /** The manifest of the environment's active deployment; null when none is active. */
  activeManifest: ManifestV1 | null;
  /** Whether the environment is strict (schema changes need `allow_contract_changes`). */
  strict: boolean;
  /** `allow_contract_changes` of the ingest request, as sent. */
  allowContractChanges: readonly string[];
  /** The environment's name, for the command a message gives (`envctl bindings set … --env <it>`). */
  environmentName?: string;
}

export interface ManifestValidation {
  errors: ValidationError[];
  warnings: ValidationWarning[];
  /** Keys of assets whose declared column set differs from the active deployment's, in manifest order. */
  changedAssets: string[];
  /** The parsed manifest (defaults applied) when its shape is valid, else null. */
  manifest: ManifestV1 | null;
}

/** A dot-joined issue path under the request body's `manifest` field. */
export function manifestPath(...segments: ReadonlyArray<string | number>): string {
  return ['manifest', ...segments].join('.');
}
