import type { z } from 'zod';
import { AssetSchema, ColumnSpec, ManifestAsset, ManifestJob, ManifestSchedule, ManifestV1 } from '@envengine/contracts';
import { didYouMean } from '@envengine/name-suggestions';
import { describedValue } from '@envengine/contracts';
import type { ValidationError } from './validation-issue.ts';

export interface ManifestShapeResult {
  manifest: ManifestV1 | null;
  errors: ValidationError[];
}

const EXPECTED_TYPE_NAMES: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  boolean: 'a boolean',
  array: 'an array',
  object: 'an object',
};

/**
 * Parses an untrusted manifest against ManifestV1: one `manifest_invalid` error per zod
 * issue, and one per unknown field. Never throws.
 */
export function parseManifestShape(input: unknown): ManifestShapeResult {
  try {
    const result = ManifestV1.safeParse(input, { reportInput: true });
    if (result.success) return { manifest: result.data, errors: [] };
    return { manifest: null, errors: result.error.issues.flatMap(errorsFromZodIssue) };
  } catch (error) {
    // zod gathers nested issues with push(...issues), which overflows the stack when one
    // array holds some 100,000 bad elements; other than that, only a value that is not
    // plain data (a throwing getter or proxy) gets here.
    const message =
      error instanceof RangeError
        ? 'The manifest has too many invalid fields to list; it cannot be checked.'
        : 'The manifest could not be read as plain JSON data.';
    return { manifest: null, errors: [{ code: 'manifest_invalid', path: 'manifest', message }] };
  }
}

/** Names authors reach for that are another field's (`dependencies` for `deps`): too far apart for an edit distance. */
const FIELD_ALIASES: Readonly<Record<string, string>> = {
  dependencies: 'deps',
  depends_on: 'deps',
  dependsOn: 'deps',
  upstreams: 'deps',
  timeout: 'timeout_seconds',
  timeoutSeconds: 'timeout_seconds',
  tz: 'timezone',
  time_zone: 'timezone',
  timeZone: 'timezone',
  connection: 'binding',
  file: 'entry',
  path: 'entry',
  id: 'key',
  type_name: 'type',
};

/** The fields of the manifest's object at `path` (zod's issue path), by where it sits. */
function knownFieldsAt(path: ReadonlyArray<PropertyKey>): readonly string[] {
  const shape = path.map((segment) => (typeof segment === 'number' ? '#' : String(segment))).join('.');
  const fields: Record<string, z.core.$ZodLooseShape> = {
    '': ManifestV1.shape,
    'assets.#': ManifestAsset.shape,
    'assets.#.schema': AssetSchema.shape,
    'assets.#.schema.columns.#': ColumnSpec.shape,
    'jobs.#': ManifestJob.shape,
    'schedules.#': ManifestSchedule.shape,
  };
  return Object.keys(fields[shape] ?? {});
}

function fieldSuggestion(key: string, known: readonly string[]): string {
  const alias = FIELD_ALIASES[key];
  if (alias !== undefined && known.includes(alias)) return ` Did you mean "${alias}"?`;
  return didYouMean(key, known);
}

function errorsFromZodIssue(issue: z.core.$ZodIssue): ValidationError[] {
  const path = ['manifest', ...issue.path.map(String)].join('.');
  const invalid = (message: string): ValidationError => ({ code: 'manifest_invalid', path, message });
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({
        code: 'manifest_invalid',
        path: `${path}.${key}`,
        message: `${path}.${key} is not a known field.${fieldSuggestion(key, knownFieldsAt(issue.path))}`,
      }));
    case 'invalid_type': {
      if (issue.input === undefined) return [invalid(`${path} is required.`)];
      const expected = EXPECTED_TYPE_NAMES[issue.expected] ?? issue.expected;
      return [invalid(`${path} must be ${expected}, not ${describedValue(issue.input)}.`)];
    }
    case 'invalid_value': {
      const allowed = issue.values.map(describedValue);
      const expected = allowed.length === 1 ? allowed[0] : `one of ${allowed.join(', ')}`;
      const suggestion = typeof issue.input === 'string' ? didYouMean(issue.input, issue.values.filter((value): value is string => typeof value === 'string')) : '';
      return [invalid(`${path} must be ${expected}, not ${describedValue(issue.input)}.${suggestion}`)];
    }
    case 'custom':
      // Our own refinements write whole sentences (manifest.schema.ts).
      return [invalid(issue.message)];
    default:
      return [invalid(`${path} is not valid: ${issue.message}.`)];
  }
}

/** A name no manifest can use (names are checked against RESOURCE_NAME_PATTERN): stands in for one that is not a string. */
const unnamed = (what: string, index: number) => `\u0000${what}-${index}`;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

/**
 * What of a manifest that fails its shape can still be checked, so that one ingest reports
 * every problem: each asset, job and schedule that parses is kept as it is; one that does
 * not stands in its place (indexes, and so paths, unchanged) with what it has of the
 * fields the other checks read (its key, deps, binding, entry, job names, cron). The
 * caller drops what those checks find at a path that already has a shape error. Null when
 * the manifest is not an object with an `assets` array. Never throws.
 */
export function salvageManifest(input: unknown): ManifestV1 | null {
  try {
    if (!isRecord(input) || !Array.isArray(input['assets'])) return null;
    // Array.from, not map: a sparse array's holes (never from JSON, but from any caller) become entries too.
    const assets = Array.from(input['assets'] as unknown[], (element: unknown, index: number) => {
      const parsed = ManifestAsset.safeParse(element);
      if (parsed.success) return parsed.data;
      const raw = isRecord(element) ? element : {};
      return {
        key: stringOr(raw['key'], unnamed('asset', index)),
        // Left out, it names none (the engine's own storage); not a string, a name no environment has.
        ...(raw['binding'] === undefined ? {} : { binding: stringOr(raw['binding'], '') }),
        entry: stringOr(raw['entry'], ''),
        deps: stringsOf(raw['deps']),
      };
    });
    const jobs = Array.isArray(input['jobs'])
      ? Array.from(input['jobs'] as unknown[], (element: unknown, index: number) => {
          const parsed = ManifestJob.safeParse(element);
          if (parsed.success) return parsed.data;
          const raw = isRecord(element) ? element : {};
          return { name: stringOr(raw['name'], unnamed('job', index)), assets: stringsOf(raw['assets']) };
        })
      : undefined;
    const schedules = Array.isArray(input['schedules'])
      ? Array.from(input['schedules'] as unknown[], (element: unknown, index: number) => {
          const parsed = ManifestSchedule.safeParse(element);
          if (parsed.success) return parsed.data;
          const raw = isRecord(element) ? element : {};
          return {
            name: stringOr(raw['name'], unnamed('schedule', index)),
            job: stringOr(raw['job'], ''),
            cron: stringOr(raw['cron'], ''),
            timezone: stringOr(raw['timezone'], 'UTC'),
          };
        })
      : undefined;
    return { version: 1, assets, ...(jobs ? { jobs } : {}), ...(schedules ? { schedules } : {}) };
  } catch {
    return null;
  }
}

/** Whether one path is the other or lies under it (`manifest.assets.1` and `manifest.assets.1.deps.0`). */
export function pathsOverlap(left: string, right: string): boolean {
  return left === right || left.startsWith(`${right}.`) || right.startsWith(`${left}.`);
}
