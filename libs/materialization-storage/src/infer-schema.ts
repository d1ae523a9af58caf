import type { DeclaredSchema } from './declared-schema.ts';

/** For an asset that declares no schema: the columns of its first row, all nullable (a bigint is an integer). */
export function inferSchema(rows: ReadonlyArray<Record<string, unknown>>): DeclaredSchema {
  const first = rows[0] ?? {};
  return {
    columns: Object.entries(first).map(([name, value]) => ({
      name,
      nullable: true,
      type:
        typeof value === 'string'
          ? 'string'
          : typeof value === 'boolean'
            ? 'boolean'
            : typeof value === 'number'
              ? rows.every((row) => row[name] == null || Number.isInteger(row[name])) ? 'integer' : 'number'
              : typeof value === 'bigint'
                ? 'integer'
                : value instanceof Date
                ? 'timestamp'
                : 'json',
    })),
  };
}
