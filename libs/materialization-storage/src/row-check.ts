import { resolveColumns, type ColumnType, type DeclaredSchema, type Row } from './declared-schema.ts';
import { isMidnightUtc, parseDate, parseTimestamp } from './temporal-values.ts';

/** The first row that does not match the asset's declared schema. */
export class RowSchemaError extends Error {
  override readonly name = 'RowSchemaError';
  constructor(
    /** 0-based index of the row in the emitted array. */
    readonly row: number,
    /** The offending column, or null when the row itself is not an object. */
    readonly column: string | null,
    /** What is wrong, without the row and column: `expected number, got string`. */
    readonly problem: string,
  ) {
    super(column === null ? `row ${row}: ${problem}` : `row ${row}, column ${JSON.stringify(column)}: ${problem}`);
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** What each type accepts, worded for the message. */
const EXPECTED: Record<ColumnType, string> = {
  string: 'string',
  integer: 'integer (a safe integer number, or a bigint within 64 bits)',
  number: 'number (finite)',
  boolean: 'boolean',
  timestamp: 'timestamp (a valid Date, or an ISO 8601 string with a time and a UTC offset)',
  date: 'date (a "YYYY-MM-DD" string, or a Date at midnight UTC)',
  json: 'JSON value',
};

/** Parquet strings are UTF-8, which cannot hold a lone UTF-16 surrogate (it would become U+FFFD). */
function isWellFormed(text: string): boolean {
  // ES2024 `String.prototype.isWellFormed`, in Node since 20; the repo's `lib` is ES2023.
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** The per-type test, kept branch-light: it runs once per cell. */
const ACCEPTS: Record<ColumnType, (value: unknown) => boolean> = {
  string: (value) => typeof value === 'string' && isWellFormed(value),
  integer: (value) =>
    typeof value === 'number' ? Number.isSafeInteger(value) : typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX,
  number: (value) => typeof value === 'number' && Number.isFinite(value),
  boolean: (value) => typeof value === 'boolean',
  timestamp: (value) =>
    typeof value === 'string' ? parseTimestamp(value) !== undefined : value instanceof Date && Number.isFinite(value.getTime()),
  date: (value) => (typeof value === 'string' ? parseDate(value) !== undefined : value instanceof Date && isMidnightUtc(value)),
  json: (value) => jsonProblem(value) === null,
};

interface ColumnCheck {
  name: string;
  type: ColumnType;
  nullable: boolean;
  accepts: (value: unknown) => boolean;
  /** A name `Object.prototype` also has (`constructor`, `toString`…): read own properties only. */
  inherited: boolean;
}

/**
 * Checks emitted rows against an asset's declared columns and throws a `RowSchemaError`
 * naming the first offending row and column. Every row must be a plain object holding
 * exactly the declared columns: a non-nullable column present and non-null (a nullable one
 * may be left out), each value of its type, and no undeclared column.
 *
 * string: a string. integer: a safe integer number or a bigint within signed 64 bits.
 * number: a finite number. boolean. timestamp: a valid Date or an ISO 8601 string with a
 * time and a UTC offset. date: a `YYYY-MM-DD` string or a Date at midnight UTC. json: a
 * JSON value (null, boolean, finite number, string, array, plain object) that survives
 * `JSON.stringify` and `JSON.parse` unchanged.
 */
export function checkRows(schema: DeclaredSchema, rows: readonly unknown[], firstIndex = 0): void {
  if (!Array.isArray(rows)) throw new TypeError('Rows are an array of objects.');
  const columns: ColumnCheck[] = resolveColumns(schema).map(({ name, type, nullable }) => ({
    name,
    type,
    nullable,
    accepts: ACCEPTS[type],
    inherited: name in Object.prototype,
  }));
  const declared = new Set(columns.map((column) => column.name));
  const columnCount = columns.length;
  for (let index = 0; index < rows.length; index++) {
    const row = rows[index];
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      throw new RowSchemaError(firstIndex + index, null, `expected an object of column values, got ${describeValue(row)}`);
    }
    for (let c = 0; c < columnCount; c++) {
      const column = columns[c]!;
      const value = column.inherited && !Object.hasOwn(row, column.name) ? undefined : (row as Row)[column.name];
      if (value === null || value === undefined) {
        if (!column.nullable) {
          const got = value === null ? 'null' : 'nothing (the column is missing)';
          throw new RowSchemaError(firstIndex + index, column.name, `expected ${EXPECTED[column.type]}, got ${got}; the column is not nullable`);
        }
      } else if (!column.accepts(value)) {
        throw new RowSchemaError(firstIndex + index, column.name, mismatch(column.type, value));
      }
    }
    for (const key in row) {
      if (!declared.has(key)) throw new RowSchemaError(firstIndex + index, key, 'not a declared column of the asset');
    }
  }
}

function mismatch(type: ColumnType, value: unknown): string {
  if (type === 'json') return `expected ${EXPECTED.json}, got ${jsonProblem(value)}`;
  let got = describeValue(value);
  if (type === 'string' && typeof value === 'string') got += ' with a lone surrogate (not valid Unicode)';
  if (type === 'integer' && typeof value === 'number' && Number.isInteger(value)) {
    got += ' (beyond Number.MAX_SAFE_INTEGER: pass a bigint)';
  }
  return `expected ${EXPECTED[type]}, got ${got}`;
}

/** A short description of a value: its kind, and the value itself where that explains. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return Number.isFinite(value.getTime()) ? `Date ${value.toISOString()}` : 'invalid Date';
  switch (typeof value) {
    case 'number':
      return `number ${String(value)}`;
    case 'bigint':
      return `bigint ${value}n`;
    case 'string':
      return `string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
    case 'object': {
      const prototype: unknown = Object.getPrototypeOf(value);
      const constructorName = (prototype as { constructor?: { name?: unknown } } | null)?.constructor?.name;
      return prototype === null || prototype === Object.prototype || typeof constructorName !== 'string'
        ? 'object'
        : `${constructorName} object`;
    }
    default:
      return typeof value;
  }
}

/**
 * Why a value is not a JSON value that round-trips (`Date at $.when`), or null when it is.
 * Object properties set to `undefined` are allowed: `JSON.stringify` leaves them out.
 */
function jsonProblem(value: unknown): string | null {
  const ancestors: object[] = [];
  const visit = (node: unknown, path: string): string | null => {
    switch (typeof node) {
      case 'string':
      case 'boolean':
        return null;
      case 'number':
        return Number.isFinite(node) ? null : `${describeValue(node)} at ${path}`;
      case 'object': {
        if (node === null) return null;
        if (ancestors.includes(node)) return `a circular reference at ${path}`;
        const isArray = Array.isArray(node);
        const prototype: unknown = Object.getPrototypeOf(node);
        if (!isArray && prototype !== Object.prototype && prototype !== null) return `${describeValue(node)} at ${path}`;
        ancestors.push(node);
        try {
          if (isArray) {
            for (let i = 0; i < node.length; i++) {
              if (node[i] === undefined) return `${i in node ? 'undefined' : 'an empty slot'} at ${path}[${i}]`;
              const problem = visit(node[i], `${path}[${i}]`);
              if (problem !== null) return problem;
            }
          } else {
            for (const key of Object.keys(node)) {
              const child = (node as Row)[key];
              if (child === undefined) continue;
              const problem = visit(child, /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`);
              if (problem !== null) return problem;
            }
          }
        } finally {
          ancestors.pop();
        }
        return null;
      }
      default:
        return `${describeValue(node)} at ${path}`;
    }
  };
  return visit(value, '$');
}
