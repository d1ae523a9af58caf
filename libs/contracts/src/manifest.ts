import { z } from 'zod';
import { MAX_TIMEOUT_SECONDS } from './timeouts.ts';
import { RESOURCE_NAME_PATTERN } from './names.ts';
import { quoted } from './quoted-values.ts';

// The version-1 manifest as a contract: the deployment-service validates ingests with it
// (through libs/manifest-rules, which adds the checks that need more than a schema), and
// placement and the workflow-worker read stored manifests with it. Every check below that
// is not a plain type, enum or unknown-field check reports a whole sentence as its
// message; manifest-rules' shape issues pass those through unchanged.

/** Column types an asset may declare (docs/design.md#manifest). */
export const ColumnType = z.enum(['string', 'integer', 'number', 'boolean', 'timestamp', 'date', 'json']);
export type ColumnType = z.infer<typeof ColumnType>;

/** A string whose rule, when broken, completes the sentence `<label> "<value>" <problem>.` */
function checkedString(label: string, problemOf: (value: string) => string | null) {
  return z.string().superRefine((value, ctx) => {
    const problem = problemOf(value);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: `${label} ${quoted(value)} ${problem}.` });
  });
}

const nonEmpty = (value: string) => (value.length === 0 ? 'must not be empty' : null);

// Asset keys and binding names end up in storage paths and URLs, so they follow the
// resource-name rule of names.ts (`RESOURCE_NAME_PATTERN`).
function resourceNameProblem(value: string): string | null {
  if (!RESOURCE_NAME_PATTERN.test(value)) {
    return 'must be 1-63 letters, digits, ".", "_" or "-", starting with a letter or digit';
  }
  return value.includes('..') ? 'must not contain ".."' : null;
}

// The entry is looked up in the bundle and later loaded from disk: it must not escape it.
function bundlePathProblem(value: string): string | null {
  if (value.length === 0) return 'must not be empty';
  if (value.startsWith('/')) return 'must be relative to the bundle, without a leading "/"';
  if (value.includes('\\')) return 'must use "/" between folders, not "\\"';
  if (value.split('/').includes('..')) return 'must stay inside the bundle, without a ".." segment';
  return null;
}

export const ColumnSpec = z.strictObject({
  name: checkedString('Column name', nonEmpty),
  type: ColumnType,
  nullable: z.boolean().default(false),
});
/** A declared column with its default applied. */
export type ColumnSpec = z.infer<typeof ColumnSpec>;
/** A column as written, where `nullable` may be left out (meaning false). */
export type ColumnSpecInput = z.input<typeof ColumnSpec>;

export const AssetSchema = z.strictObject({ columns: z.array(ColumnSpec) });
export type AssetSchema = z.infer<typeof AssetSchema>;

export const ManifestAsset = z
  .strictObject({
    key: checkedString('Asset key', resourceNameProblem),
    /** Optional: an asset without one stores under the environment's prefix with the engine's own storage. */
    binding: checkedString('Binding name', resourceNameProblem).optional(),
    entry: checkedString('Asset entry', bundlePathProblem),
    deps: z.array(z.string()).default([]),
    schema: AssetSchema.optional(),
    /** Its time limit; the runner's own limit (ASSET_TIMEOUT_MS) caps it further. */
    timeout_seconds: z
      .number()
      .int({ message: 'Asset timeout_seconds must be a whole number of seconds.' })
      .min(1, { message: `Asset timeout_seconds must be between 1 and ${MAX_TIMEOUT_SECONDS}.` })
      .max(MAX_TIMEOUT_SECONDS, { message: `Asset timeout_seconds must be between 1 and ${MAX_TIMEOUT_SECONDS} (a day).` })
      .optional(),
  })
  .superRefine((asset, ctx) => {
    const firstIndexByName = new Map<string, number>();
    asset.schema?.columns.forEach((column, index) => {
      const first = firstIndexByName.get(column.name);
      if (first === undefined) {
        firstIndexByName.set(column.name, index);
        return;
      }
      ctx.addIssue({
        code: 'custom',
        path: ['schema', 'columns', index, 'name'],
        message: `Asset ${quoted(asset.key)} declares column ${quoted(column.name)} twice (columns ${first} and ${index}).`,
      });
    });
  });
export type ManifestAsset = z.infer<typeof ManifestAsset>;

export const ManifestJob = z
  .strictObject({
    name: checkedString('Job name', nonEmpty),
    assets: z.array(z.string()),
  })
  .superRefine((job, ctx) => {
    if (job.assets.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['assets'], message: `Job ${quoted(job.name)} must name at least one asset.` });
    }
  });
export type ManifestJob = z.infer<typeof ManifestJob>;

export const ManifestSchedule = z.strictObject({
  name: checkedString('Schedule name', nonEmpty),
  job: z.string(),
  // The cron expression and the time zone are checked later, as `invalid_cron`.
  cron: z.string(),
  timezone: z.string().default('UTC'),
});
export type ManifestSchedule = z.infer<typeof ManifestSchedule>;

/** An array refined so that no two elements share a `name`, e.g. `what` "Job", `field` "jobs". */
function uniquelyNamed<T extends z.ZodType<{ name: string }>>(element: T, what: string, field: string) {
  return z.array(element).superRefine((items, ctx) => {
    const firstIndexByName = new Map<string, number>();
    items.forEach((item, index) => {
      const first = firstIndexByName.get(item.name);
      if (first === undefined) {
        firstIndexByName.set(item.name, index);
        return;
      }
      ctx.addIssue({
        code: 'custom',
        path: [index, 'name'],
        message: `${what} name ${quoted(item.name)} is used twice (${field} ${first} and ${index}).`,
      });
    });
  });
}

/**
 * A version-1 manifest (docs/design.md#manifest). Unknown fields are shape errors so that a typo is
 * not silently ignored. Duplicate asset keys are not a shape error: they are reported as
 * `duplicate_asset` by validateManifest.
 */
export const ManifestV1 = z.strictObject({
  version: z.literal(1),
  assets: z.array(ManifestAsset),
  jobs: uniquelyNamed(ManifestJob, 'Job', 'jobs').optional(),
  schedules: uniquelyNamed(ManifestSchedule, 'Schedule', 'schedules').optional(),
});
export type ManifestV1 = z.infer<typeof ManifestV1>;
/** A manifest as written, before defaults are applied. */
export type ManifestV1Input = z.input<typeof ManifestV1>;
