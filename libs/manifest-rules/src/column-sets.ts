import type { ColumnSpecInput } from '@envengine/contracts';
import { quoted } from '@envengine/contracts';

// A schema is compared as a SET of (name, type, nullable): column order does not matter
// and a missing `nullable` means false (docs/design.md#ingest).

/** One column as a set member; JSON keeps names with any characters apart. */
function columnTuple(column: ColumnSpecInput): string {
  return JSON.stringify([column.name, column.type, column.nullable ?? false]);
}

function columnTupleSet(columns: readonly ColumnSpecInput[]): Set<string> {
  return new Set(columns.map(columnTuple));
}

function sameMembers(left: ReadonlySet<string>, right: ReadonlySet<string>): boolean {
  if (left.size !== right.size) return false;
  for (const member of left) if (!right.has(member)) return false;
  return true;
}

/** Whether two column lists declare different sets of (name, type, nullable). */
export function columnSetsDiffer(left: readonly ColumnSpecInput[], right: readonly ColumnSpecInput[]): boolean {
  return !sameMembers(columnTupleSet(left), columnTupleSet(right));
}

const nullability = (column: ColumnSpecInput) => ((column.nullable ?? false) ? 'nullable' : 'not nullable');

/**
 * For the activation re-check: null when the stored columns of a materialization are the
 * declared set, else one sentence naming the first difference, looking first through the
 * declared columns in order (missing, type, nullability), then through the stored ones
 * (extra columns).
 */
export function storedColumnsMismatch(
  declared: readonly ColumnSpecInput[],
  stored: readonly ColumnSpecInput[],
): string | null {
  const declaredSet = columnTupleSet(declared);
  const storedSet = columnTupleSet(stored);
  if (sameMembers(declaredSet, storedSet)) return null;

  for (const column of declared) {
    if (storedSet.has(columnTuple(column))) continue;
    const namesake = stored.find((candidate) => candidate.name === column.name);
    if (namesake === undefined) {
      return `Declared column ${quoted(column.name)} is missing from the stored columns.`;
    }
    if (namesake.type !== column.type) {
      return `Column ${quoted(column.name)} is declared as ${column.type} but stored as ${namesake.type}.`;
    }
    return `Column ${quoted(column.name)} is declared ${nullability(column)} but stored ${nullability(namesake)}.`;
  }
  for (const column of stored) {
    if (declaredSet.has(columnTuple(column))) continue;
    return `Stored column ${quoted(column.name)} (${column.type}, ${nullability(column)}) is not declared.`;
  }
  return null; // unreachable: the sets differ, so one of the loops found a member the other lacks
}
