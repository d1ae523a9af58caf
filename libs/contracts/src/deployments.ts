import { z } from 'zod';
import { ResourceName } from './names.ts';
import { ManifestV1 } from './manifest.ts';
import { GitInfo, ValidationItem } from './deployment-fields.ts';

/** `sha256:` and the 64 lowercase hex digits of the bundle's SHA-256. */
export const BUNDLE_REF_PATTERN = /^sha256:[0-9a-f]{64}$/;
export const BundleRef = z.string().regex(BUNDLE_REF_PATTERN, { message: 'must be "sha256:" followed by 64 lowercase hex digits' });

export const BundleUploaded = z.strictObject({ bundle_ref: BundleRef, size: z.number().int().nonnegative() });
export type BundleUploaded = z.infer<typeof BundleUploaded>;

export const BundlePathParams = z.object({ ref: BundleRef });

export { GitInfo, ValidationItem };

export const DeploymentValidation = z.object({ errors: z.array(ValidationItem), warnings: z.array(ValidationItem) });
export type DeploymentValidation = z.infer<typeof DeploymentValidation>;

export const DeploymentStatus = z.enum(['ready', 'failed']);
export type DeploymentStatus = z.infer<typeof DeploymentStatus>;

/** What an activation found: assets with a declared schema checked, and those quarantined. */
export const Recheck = z.object({ checked: z.number().int().nonnegative(), quarantined: z.array(z.string()) });
export type Recheck = z.infer<typeof Recheck>;

/** The deployment row of every response; the manifest is never in it. */
export const Deployment = z.object({
  id: z.string(),
  environment_id: z.string(),
  status: DeploymentStatus,
  active: z.boolean(),
  git: GitInfo,
  bundle_ref: z.string(),
  sdk_version: z.string().nullable(),
  validation: DeploymentValidation,
  allow_contract_changes: z.array(z.string()),
  created_by: z.string().nullable(),
  /** The deployment this one was promoted from (`POST /deployments/:id/promote`), else null. */
  promoted_from: z.string().nullable(),
  inserted_at: z.iso.datetime(),
  /** Present on the answer of an activation (and of an ingest that activated). */
  recheck: Recheck.optional(),
});
export type Deployment = z.infer<typeof Deployment>;

/**
 * What makes an ingest a deployment: a JSON body whose `manifest` is an object and whose
 * `bundle_ref` is a string. Anything else is 422 invalid_request and no row
 * (docs/design.md#ingest).
 */
export const IngestGate = z.looseObject({
  manifest: z.record(z.string(), z.unknown(), { message: 'is required and must be the manifest object' }),
  bundle_ref: z.string({ message: 'is required and must be a string "sha256:<hex>"' }),
});

/**
 * The ingest fields beside `manifest` and `bundle_ref`. The command-line client also
 * sends the manifest's own top-level fields; they are accepted and ignored (`manifest` is
 * what is validated). A problem here fails the deployment, it does not refuse the body.
 */
export const IngestOptions = z.strictObject({
  manifest: z.unknown(),
  bundle_ref: z.unknown(),
  git: GitInfo.optional(),
  sdk_version: z.string().max(100, { message: 'must be at most 100 characters' }).optional(),
  activate: z.boolean().default(true),
  allow_contract_changes: z.array(z.string()).default([]),
  created_by: z.string().max(255, { message: 'must be at most 255 characters' }).optional(),
  version: z.unknown().optional(),
  assets: z.unknown().optional(),
  jobs: z.unknown().optional(),
  schedules: z.unknown().optional(),
});
export type IngestOptions = z.infer<typeof IngestOptions>;

/** The ingest's body as documented (the ingest checks it itself with IngestGate and IngestOptions). */
export const CreateDeploymentRequest = IngestOptions.extend({
  manifest: ManifestV1.describe('The manifest (version 1): `version`, `assets`, `jobs`, `schedules` (docs/api.md, docs/manifest.schema.json). Whatever is sent is checked by the ingest: a manifest that breaks these rules makes a failed deployment (422) with every problem listed.'),
  bundle_ref: BundleRef.describe('The digest of the uploaded bundle (POST /bundles).'),
});

/** Any id is looked up: one that names no deployment of the caller is 404, whatever its form. */
export const DeploymentPathParams = z.object({ id: z.string().min(1).max(100) });

export const DeploymentListQuery = z.strictObject({
  active: z.enum(['true', 'false']).optional(),
  limit: z.coerce.number().int().min(1).max(200).optional(),
  cursor: z.string().regex(/^dep_[0-9a-z]{26}$/, { message: 'must be the id of the last deployment of the previous page' }).optional(),
});

export const ActivateRequest = z.strictObject({});

/**
 * `POST /deployments/:id/promote`: the same manifest, bundle, git and sdk_version as a new
 * deployment of `environment` (docs/design.md#previews-promotion-and-diffs), validated by
 * that environment's own ingest rules.
 */
export const PromoteRequest = z.strictObject({
  environment: ResourceName.describe('The environment (of the same caller) to deploy to.'),
  activate: z.boolean().default(true),
  allow_contract_changes: z.array(z.string().min(1).max(200)).max(1000).default([]),
});
export type PromoteRequest = z.infer<typeof PromoteRequest>;

/** `GET /deployments/:id/diff`: the deployment to compare against (default: the one active before it, else the active one). */
export const DeploymentDiffQuery = z.strictObject({
  base: z.string().min(1).max(100).optional(),
});

/** A value of a field before and after (null where the side has none). */
const FieldChange = <T extends z.ZodType>(value: T) => z.object({ from: value.nullable(), to: value.nullable() });

export const DiffChange = z.enum(['added', 'removed', 'changed']);

/** A declared column as the diff names it. */
export const DiffColumn = z.object({ name: z.string(), type: z.string(), nullable: z.boolean() });

/**
 * One asset that differs. `columns_*` are always present (an added asset's columns are all
 * added); a field is present only when it differs.
 */
export const AssetDiff = z.object({
  key: z.string(),
  change: DiffChange,
  columns_added: z.array(DiffColumn),
  columns_removed: z.array(DiffColumn),
  /** A column in both whose type or nullability differs: `from`/`to` are its types; `nullable` only when that changed. */
  columns_changed: z.array(z.object({ name: z.string(), from: z.string(), to: z.string(), nullable: FieldChange(z.boolean()).optional() })),
  entry: FieldChange(z.string()).optional(),
  deps: z.object({ added: z.array(z.string()), removed: z.array(z.string()) }).optional(),
  binding: FieldChange(z.string()).optional(),
  timeout_seconds: FieldChange(z.number()).optional(),
});
export type AssetDiff = z.infer<typeof AssetDiff>;

export const JobDiff = z.object({
  name: z.string(),
  change: DiffChange,
  assets: z.object({ added: z.array(z.string()), removed: z.array(z.string()) }).optional(),
});
export type JobDiff = z.infer<typeof JobDiff>;

export const ScheduleDiff = z.object({
  name: z.string(),
  change: DiffChange,
  job: FieldChange(z.string()).optional(),
  cron: FieldChange(z.string()).optional(),
  timezone: FieldChange(z.string()).optional(),
});
export type ScheduleDiff = z.infer<typeof ScheduleDiff>;

/** The bundle's file paths, compared by the SHA-256 of their content. */
export const FilesDiff = z.object({ added: z.array(z.string()), removed: z.array(z.string()), changed: z.array(z.string()) });
export type FilesDiff = z.infer<typeof FilesDiff>;

/** What changed from `base_id` to `head_id`; `base_id` null when there is nothing to compare with (everything is added). */
export const DeploymentDiff = z.object({
  base_id: z.string().nullable(),
  head_id: z.string(),
  assets: z.array(AssetDiff),
  jobs: z.array(JobDiff),
  schedules: z.array(ScheduleDiff),
  files: FilesDiff,
});
export type DeploymentDiff = z.infer<typeof DeploymentDiff>;

/** A column as a materialization stored it. */
export const StoredColumn = z.strictObject({ name: z.string().min(1), type: z.string().min(1), nullable: z.boolean().default(false) });
export type StoredColumn = z.infer<typeof StoredColumn>;

export const MaterializationStatus = z.enum(['latest', 'quarantined']);

export const Materialization = z.object({
  id: z.string(),
  asset_key: z.string(),
  columns: z.array(StoredColumn),
  row_count: z.number().int().nonnegative(),
  /** Where the Parquet file is (`<storage_prefix>/<asset key>/<id>.parquet`), null for rows recorded without one. */
  location: z.string().nullable(),
  bytes: z.number().int().nonnegative().nullable(),
  run_id: z.string().nullable(),
  /** The attempt that wrote it; null for rows recorded without one. */
  attempt_id: z.string().nullable(),
  status: MaterializationStatus,
  quarantine: z.object({ reason: z.string(), deployment_id: z.string(), at: z.iso.datetime() }).nullable(),
  inserted_at: z.iso.datetime(),
});
export type Materialization = z.infer<typeof Materialization>;

/** One asset of the active deployment, with its latest materialization (or null) and that one's status. */
export const AssetListing = z.object({
  key: z.string(),
  /** Null for an asset that names none. */
  binding: z.string().nullable(),
  schema: z.object({ columns: z.array(StoredColumn) }).nullable(),
  /** `latest` or `quarantined` (docs/design.md#activation-and-the-re-check), the latest materialization's; null before the first. */
  status: MaterializationStatus.nullable(),
  latest_materialization: Materialization.nullable(),
});
export type AssetListing = z.infer<typeof AssetListing>;

const MaterializationId = z.string().regex(/^mat_[0-9a-z]{26}$/, { message: 'must be a materialization id (mat_…)' });
const AssetKeyParam = z.string().min(1).max(200);

/** `/environments/:name/assets/:key/…` */
export const AssetPathParams = z.object({ name: ResourceName, key: AssetKeyParam });
export type AssetPathParams = z.infer<typeof AssetPathParams>;

/** `/environments/:name/assets/:key/materializations/:id/…` */
// Any id is looked up: one that is malformed is as unknown as a missing one (404, docs/design.md#wire-conventions).
export const AssetMaterializationPathParams = z.object({ name: ResourceName, key: AssetKeyParam, id: z.string().min(1).max(100) });
export type AssetMaterializationPathParams = z.infer<typeof AssetMaterializationPathParams>;

/** `GET …/assets/:key/materializations`: newest first, a page at a time. */
export const MaterializationListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  /** Paging: the id of the last materialization of the previous page. */
  before: MaterializationId.optional(),
});
export type MaterializationListQuery = z.infer<typeof MaterializationListQuery>;

/** The most rows a preview gives; a larger look is a download. */
export const PREVIEW_MAX_ROWS = 1000;

export const MaterializationPreviewQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(PREVIEW_MAX_ROWS).default(20),
});
export type MaterializationPreviewQuery = z.infer<typeof MaterializationPreviewQuery>;

/**
 * `GET …/materializations/:id/preview`: the first rows, decoded as `ctx.read` gives them
 * (timestamps as ISO 8601 strings, dates as `YYYY-MM-DD`, JSON parsed), except integers
 * past 2^53, which JSON cannot carry exactly: those are decimal strings.
 */
export const MaterializationPreview = z.object({
  materialization_id: z.string(),
  columns: z.array(StoredColumn),
  /** Rows in the file. */
  row_count: z.number().int().nonnegative(),
  rows: z.array(z.record(z.string(), z.unknown())),
  /** Whether the file has rows past the ones shown. */
  truncated: z.boolean(),
});
export type MaterializationPreview = z.infer<typeof MaterializationPreview>;

/** Internal: one materialization of an environment's asset, for the placement-service to read it. */
export const AssetMaterializationParams = z.object({
  environmentId: z.string().min(1).max(100),
  key: AssetKeyParam,
  // Any id the public route took: a malformed one is found nowhere (404).
  id: z.string().min(1).max(100),
});

/** Internal: what an attempt records after `ctx.emit` wrote its file (tests record bare rows too). */
export const RecordMaterializationRequest = z.strictObject({
  /** Given when the file was already named after it. */
  id: z.string().regex(/^mat_[0-9a-z]{26}$/).optional(),
  environment_id: z.string(),
  asset_key: z.string().min(1),
  columns: z.array(StoredColumn),
  row_count: z.number().int().nonnegative().default(0),
  location: z.string().min(1).nullable().default(null),
  bytes: z.number().int().nonnegative().nullable().default(null),
  run_id: z.string().nullable().default(null),
  attempt_id: z.string().nullable().default(null),
});

/** Internal: what a run needs of the deployment it runs against; its manifest passed validation at ingest. */
export const DeploymentRunSpec = z.object({
  id: z.string(),
  environment_id: z.string(),
  status: DeploymentStatus,
  bundle_ref: BundleRef,
  manifest: ManifestV1,
});
export type DeploymentRunSpec = z.infer<typeof DeploymentRunSpec>;

export const LatestMaterializationParams = z.object({ environmentId: z.string().min(1).max(100), key: z.string().min(1).max(200) });
export type RecordMaterializationRequest = z.infer<typeof RecordMaterializationRequest>;

/**
 * Internal: takes back a materialization recorded for an attempt whose lease was
 * superseded before the attempt's outcome could name it (the worker's write is refused,
 * so it must change nothing). Only the attempt that recorded it can take it back.
 */
export const RetractMaterializationRequest = z.strictObject({ attempt_id: z.string().min(1).max(100) });
export type RetractMaterializationRequest = z.infer<typeof RetractMaterializationRequest>;
export const MaterializationPathParams = z.object({ id: z.string().regex(/^mat_[0-9a-z]{26}$/, { message: 'must be a materialization id' }) });
export const MaterializationRetracted = z.object({ id: z.string(), retracted: z.boolean() });
export type MaterializationRetracted = z.infer<typeof MaterializationRetracted>;

/** Internal: moves an environment's pointer (the activation workflow's last step). */
export const SetActiveDeploymentRequest = z.strictObject({ deployment_id: z.string().min(1), git_ref: z.string().min(1) });
export type SetActiveDeploymentRequest = z.infer<typeof SetActiveDeploymentRequest>;

/**
 * `202` body of an ingest whose workflow is still going when the request's wait is over
 * (`WORKFLOW_WAIT_MS`, below the gateway's upstream timeout): the id to read with
 * `GET /api/v1/deployments/:id` once it is recorded. Being a 2xx, it is kept for an
 * Idempotency-Key, so a retry with the key answers this again and starts no second ingest.
 */
export const DeploymentPending = z.object({
  id: z.string(),
  environment_id: z.string(),
  status: z.literal('pending'),
});
export type DeploymentPending = z.infer<typeof DeploymentPending>;

/**
 * What a bundle may unpack to (docs/design.md#availability): the archive's uncompressed size
 * and its file count, checked while it is read at upload and again by each worker's bundle
 * cache as it unpacks, so that a small upload cannot become a full disk (a tar bomb).
 */
export const BUNDLE_UNPACKED_DEFAULTS = { maxUnpackedMb: 512, maxFiles: 10_000 } as const;

export interface BundleLimits {
  /** The upload itself, compressed. */
  bytes: number;
  /** The archive uncompressed (its files, their headers and padding). */
  unpackedBytes: number;
  /** Files (and directories) in the archive. */
  files: number;
}
