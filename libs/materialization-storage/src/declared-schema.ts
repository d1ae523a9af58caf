/**
 * The column types an asset may declare (the manifest's `ColumnType`,
 * libs/contracts/src/manifest.ts). Kept here rather than imported:
 * `@envengine/manifest-rules` is a rules lib of another scope.
 */
export const COLUMN_TYPES = ['string', 'integer', 'number', 'boolean', 'timestamp', 'date', 'json'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

/** A column as the manifest declares it; structurally the manifest's `ColumnSpecInput`. */
export interface DeclaredColumn {
  name: string;
  type: ColumnType;
  /** Whether rows may leave the value out or set it to `null`. Default: `false`. */
  nullable?: boolean;
}

/** An asset's declared schema; structurally the manifest's `AssetSchema`. */
export interface DeclaredSchema {
  columns: readonly DeclaredColumn[];
}

/** A declared column with its default applied. */
export interface ResolvedColumn {
  name: string;
  type: ColumnType;
  nullable: boolean;
}

/** One row as a pipeline emits it and as it is read back: column name → value. */
export type Row = Record<string, unknown>;

const TYPE_SET: ReadonlySet<string> = new Set(COLUMN_TYPES);

/**
 * Applies defaults and rejects a schema the manifest rules would have rejected (empty or
 * repeated names, unknown types): a programming error here, not a row problem.
 */
export function resolveColumns(schema: DeclaredSchema): ResolvedColumn[] {
  if (schema === null || typeof schema !== 'object' || !Array.isArray(schema.columns)) {
    throw new TypeError('A declared schema is an object with a "columns" array.');
  }
  const seen = new Set<string>();
  return schema.columns.map((column, index) => {
    const { name, type, nullable } = column;
    if (typeof name !== 'string' || name.length === 0) {
      throw new TypeError(`Declared column ${index} has no name.`);
    }
    if (seen.has(name)) throw new TypeError(`Column "${name}" is declared twice.`);
    seen.add(name);
    if (!TYPE_SET.has(type)) {
      throw new TypeError(`Column "${name}" has type ${JSON.stringify(type)}; declared types are ${COLUMN_TYPES.join(', ')}.`);
    }
    if (nullable !== undefined && typeof nullable !== 'boolean') {
      throw new TypeError(`Column "${name}" has a non-boolean "nullable".`);
    }
    return { name, type, nullable: nullable ?? false };
  });
}
