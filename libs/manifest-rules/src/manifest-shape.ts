import type { z } from 'zod';
import { ManifestV1 } from './manifest.schema.ts';
import { describedValue } from './message-values.ts';
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

function errorsFromZodIssue(issue: z.core.$ZodIssue): ValidationError[] {
  const path = ['manifest', ...issue.path.map(String)].join('.');
  const invalid = (message: string): ValidationError => ({ code: 'manifest_invalid', path, message });
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({
        code: 'manifest_invalid',
        path: `${path}.${key}`,
        message: `${path}.${key} is not a known field.`,
      }));
    case 'invalid_type': {
      if (issue.input === undefined) return [invalid(`${path} is required.`)];
      const expected = EXPECTED_TYPE_NAMES[issue.expected] ?? issue.expected;
      return [invalid(`${path} must be ${expected}, not ${describedValue(issue.input)}.`)];
    }
    case 'invalid_value': {
      const allowed = issue.values.map(describedValue);
      const expected = allowed.length === 1 ? allowed[0] : `one of ${allowed.join(', ')}`;
      return [invalid(`${path} must be ${expected}, not ${describedValue(issue.input)}.`)];
    }
    case 'custom':
      // Our own refinements write whole sentences (manifest.schema.ts).
      return [invalid(issue.message)];
    default:
      return [invalid(`${path} is not valid: ${issue.message}.`)];
  }
}
