import { z } from 'zod';
import { dataEnvelope } from './envelope.ts';
import { ResourceName } from './names.ts';

export const Executor = z.enum(['local', 'remote']);
export type Executor = z.infer<typeof Executor>;

export const EnvironmentKind = z.enum(['persistent', 'preview']);
export type EnvironmentKind = z.infer<typeof EnvironmentKind>;

/**
 * What the environment's assets may reach on the network (docs/design.md#the-network):
 * `none` (the default) nothing; `public` other hosts through a user-mode network, never the
 * engine host, private ranges or link-local addresses.
 */
export const Egress = z.enum(['none', 'public']);
export type Egress = z.infer<typeof Egress>;

/**
 * `active`, or `deleting` while its tear-down runs (docs/design.md#environment-lifecycle):
 * writes to a deleting environment answer 409 `environment_deleting`.
 */
export const EnvironmentStatus = z.enum(['active', 'deleting']);
export type EnvironmentStatus = z.infer<typeof EnvironmentStatus>;

/** Hours a preview environment lives after its creation or its last deploy: fractions allowed, at most a year. */
export const TtlHours = z
  .number({ message: 'must be a number of hours' })
  .positive({ message: 'must be more than 0' })
  .max(8760, { message: 'must be at most 8760 (a year)' });

/** Runs of the environment queued or running at once; further ones wait in order. */
export const MaxConcurrentRuns = z
  .number({ message: 'must be a whole number' })
  .int({ message: 'must be a whole number' })
  .min(1, { message: 'must be at least 1' })
  .max(10_000, { message: 'must be at most 10000' });

/** The environment object, as every response carries it: all fields always present. */
export const Environment = z.object({
  id: z.string(),
  name: ResourceName,
  kind: EnvironmentKind,
  git_ref: z.string().nullable(),
  storage_prefix: z.string(),
  strict: z.boolean(),
  schedules_paused: z.boolean(),
  schedules_paused_reason: z.string().nullable(),
  executor: Executor,
  egress: Egress,
  active_deployment_id: z.string().nullable(),
  status: EnvironmentStatus,
  /** A preview's lifetime after its creation or last deploy; null without one (always null on a persistent environment). */
  ttl_hours: TtlHours.nullable(),
  /** A preview's idle lifetime: with no deploy and no run for that long it expires; null without one. */
  idle_ttl_hours: TtlHours.nullable(),
  /** When the engine tears the environment down (the earlier of its TTLs); null without a TTL. */
  expires_at: z.iso.datetime().nullable(),
  /** Whether the TTL's tear-down removes the environment's materialization files (true unless turned off at create). */
  purge_data_on_expiry: z.boolean(),
  /** Runs allowed in flight at once; null for no limit. */
  max_concurrent_runs: MaxConcurrentRuns.nullable(),
  /** A preview's parent environment (its name), whose bindings and secrets it inherits; null for none. */
  parent: ResourceName.nullable(),
  inserted_at: z.iso.datetime(),
});
export type Environment = z.infer<typeof Environment>;

/** JavaScript's white space (`\s`) spelled out, so that a pattern means the same in every regex dialect. */
const WHITE_SPACE = String.raw`\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff`;

/** A path segment of characters outside `excluded`, other than `.` and `..`. */
const segment = (excluded: string) => String.raw`(?:[^.${excluded}][^${excluded}]*|\.[^.${excluded}][^${excluded}]*|\.\.[^${excluded}]+)`;

const FILE_SEGMENT = segment(String.raw`/\\?#%\x00${WHITE_SPACE}`);

/**
 * The storage prefixes the document shows: `s3://<bucket>/<path>` or an absolute
 * `file://` path, without white space, empty, `.` or `..` segments (the placement-service's
 * check, `storagePrefixProblem`). The server also takes percent-encoded `file://` segments,
 * which no pattern can check; and a `file://` prefix must lie under the engine's storage
 * root, a setting of the deployment.
 */
const STORAGE_PREFIX_PATTERN =
  String.raw`^(?:[sS]3://[^/\\?#*${WHITE_SPACE}]+(?:/${segment(String.raw`/\\?#*${WHITE_SPACE}`)})+/*` +
  String.raw`|[fF][iI][lL][eE]://(?:[lL][oO][cC][aA][lL][hH][oO][sS][tT])?/(?:${FILE_SEGMENT}(?:/${FILE_SEGMENT})*/?)?)$`;

export const StoragePrefix = z
  .string()
  .min(1, { message: 'must not be empty' })
  .max(1024, { message: 'must be at most 1024 characters' })
  .regex(new RegExp(`^[^${WHITE_SPACE}]*$`), { message: 'must not contain white space' })
  .meta({ pattern: STORAGE_PREFIX_PATTERN });

/** Unknown fields are rejected so that server-owned fields cannot be set (mass assignment). */
export const CreateEnvironmentRequest = z
  .strictObject({
    name: ResourceName,
    /** May be left out by a preview with a `parent`: it is then `<parent's prefix>/previews/<name>`. */
    storage_prefix: StoragePrefix.optional(),
    executor: Executor,
    kind: EnvironmentKind.default('persistent'),
    /** A preview's parent: an environment of the same caller, not a preview (docs/design.md#previews-promotion-and-diffs). */
    parent: ResourceName.optional(),
    strict: z.boolean().default(false),
    egress: Egress.default('none'),
    ttl_hours: TtlHours.nullable().optional(),
    /** A preview with no deploy and no run for this long expires. */
    idle_ttl_hours: TtlHours.nullable().optional(),
    max_concurrent_runs: MaxConcurrentRuns.nullable().optional(),
    /** `false` keeps a preview's files when its TTL tears it down (a DELETE purges only with `?purge_data=true`). */
    purge_data_on_expiry: z.boolean().default(true),
  })
  .refine((request) => request.kind === 'preview' || request.ttl_hours == null, {
    message: 'is only for preview environments: a persistent environment never expires',
    path: ['ttl_hours'],
  })
  .refine((request) => request.kind === 'preview' || request.idle_ttl_hours == null, {
    message: 'is only for preview environments: a persistent environment never expires',
    path: ['idle_ttl_hours'],
  })
  .refine((request) => request.kind === 'preview' || request.parent === undefined, {
    message: 'is only for preview environments: a preview branches from its parent',
    path: ['parent'],
  })
  .refine((request) => request.storage_prefix !== undefined || request.parent !== undefined, {
    message: 'is required (only a preview with a parent may leave it out)',
    path: ['storage_prefix'],
  })
  // The refinements, as the OpenAPI document states them.
  .meta({
    allOf: [
      { if: { properties: { kind: { const: 'preview' } }, required: ['kind'] }, then: true, else: { properties: { ttl_hours: { type: 'null' }, idle_ttl_hours: { type: 'null' } }, not: { required: ['parent'] } } },
      { anyOf: [{ required: ['storage_prefix'] }, { required: ['parent'] }] },
    ],
  });
export type CreateEnvironmentRequest = z.infer<typeof CreateEnvironmentRequest>;

/**
 * `PATCH /api/v1/environments/:name`: the settings that may change after create. Unknown
 * fields, and server-owned ones (`id`, `name`, `kind`, ...), are refused. `null` removes a
 * TTL or a run limit.
 */
export const PatchEnvironmentRequest = z
  .strictObject({
    egress: Egress.optional(),
    strict: z.boolean().optional(),
    ttl_hours: TtlHours.nullable().optional(),
    idle_ttl_hours: TtlHours.nullable().optional(),
    max_concurrent_runs: MaxConcurrentRuns.nullable().optional(),
  })
  .refine((patch) => Object.keys(patch).length > 0, {
    message: 'names at least one setting to change (egress, strict, ttl_hours, idle_ttl_hours, max_concurrent_runs)',
  })
  .meta({ minProperties: 1 });
export type PatchEnvironmentRequest = z.infer<typeof PatchEnvironmentRequest>;

/** `DELETE /api/v1/environments/:name` query: `force` cancels running attempts, `purge_data` removes the materialization files. */
const QueryFlag = z
  .enum(['true', 'false'], { message: 'must be true or false' })
  .optional()
  .transform((flag) => flag === 'true');
export const DeleteEnvironmentQuery = z.strictObject({ force: QueryFlag, purge_data: QueryFlag });
export type DeleteEnvironmentQuery = z.infer<typeof DeleteEnvironmentQuery>;

export const DeletedEnvironment = z.object({ name: ResourceName });
export type DeletedEnvironment = z.infer<typeof DeletedEnvironment>;

export const EnvironmentPathParams = z.object({ name: ResourceName });
export type EnvironmentPathParams = z.infer<typeof EnvironmentPathParams>;

export const SetPlacementRequest = z.strictObject({ executor: Executor });
export type SetPlacementRequest = z.infer<typeof SetPlacementRequest>;

/** Body of schedules pause and resume; both are optional (docs/design.md#schedules-pause-and-resume). */
export const ScheduleToggleRequest = z.strictObject({
  reason: z.string().max(500, { message: 'must be at most 500 characters' }).nullable().optional(),
});
export type ScheduleToggleRequest = z.infer<typeof ScheduleToggleRequest>;

export const PlacementResult = z.object({
  executor: Executor,
  environments: z.array(Environment),
});
export type PlacementResult = z.infer<typeof PlacementResult>;

export const EnvironmentResponse = dataEnvelope(Environment);
export const EnvironmentListResponse = dataEnvelope(z.array(Environment));
export const PlacementResponse = dataEnvelope(PlacementResult);
export const DeletedEnvironmentResponse = dataEnvelope(DeletedEnvironment);

/** Internal: an environment by its id (the tear-down's steps). */
export const EnvironmentIdParams = z.object({ id: z.string().regex(/^env_[0-9a-z]{26}$/, { message: 'must be an environment id' }) });
export type EnvironmentIdParams = z.infer<typeof EnvironmentIdParams>;

/** Internal: what one step of a tear-down removed, for its log and the workflow's history (counts only). */
export const TeardownStepReport = z.record(z.string(), z.number().int().nonnegative());
export type TeardownStepReport = z.infer<typeof TeardownStepReport>;

/** Internal: the next page of an environment's files to remove (a tear-down with `purge_data`), after the last one removed. */
export const PurgeFilesRequest = z.strictObject({ after: z.string().min(1).max(4096).nullable() });
export type PurgeFilesRequest = z.infer<typeof PurgeFilesRequest>;
/** What a page of a purge removed, and where the next page starts (null: the last). */
export const PurgeFilesResult = z.object({ removed: z.number(), next: z.string().nullable() });
export type PurgeFilesResult = z.infer<typeof PurgeFilesResult>;

/** Internal: a preview's TTL lapsed; the tear-down begins unless a deploy moved it (then `expires_at` is the new instant). */
export const ExpireEnvironmentResult = z.object({ expired: z.boolean(), expires_at: z.iso.datetime().nullable() });
export type ExpireEnvironmentResult = z.infer<typeof ExpireEnvironmentResult>;

/** Internal: the expiry timer's notice that a TTL lapses soon, for the instant it was armed for. */
export const ExpiryNoticeRequest = z.object({ expires_at: z.iso.datetime() });
export type ExpiryNoticeRequest = z.infer<typeof ExpiryNoticeRequest>;
/** `noticed`: the event was recorded now (false: the expiry moved, the environment went, or it was recorded before). */
export const ExpiryNoticeResult = z.object({ noticed: z.boolean() });
export type ExpiryNoticeResult = z.infer<typeof ExpiryNoticeResult>;

/** Internal: the tear-down's last step, the environment's document removed. */
export const EnvironmentRemoved = z.object({ removed: z.number() });
export type EnvironmentRemoved = z.infer<typeof EnvironmentRemoved>;

/**
 * Published (Redis pub/sub) by the placement-service when an environment's tear-down has
 * ended: the engine's runners let go of what they keep for it (its bundles in their cache).
 */
export const ENVIRONMENT_RETIRED_CHANNEL = 'envengine:environments:retired';
export const EnvironmentRetired = z.strictObject({ tenant_id: z.string().min(1), environment_id: z.string().min(1) });
export type EnvironmentRetired = z.infer<typeof EnvironmentRetired>;
