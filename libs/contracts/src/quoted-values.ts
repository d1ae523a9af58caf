// How values from an untrusted manifest appear inside issue messages: quoted, bounded in
// length, and never by calling anything the value itself defines (no toString, no getters).

const MAX_QUOTED_LENGTH = 80;

/** `"text"` as JSON would write it, shortened to a readable length. */
export function quoted(text: string): string {
  const shown = text.length > MAX_QUOTED_LENGTH ? `${text.slice(0, MAX_QUOTED_LENGTH)}…` : text;
  return JSON.stringify(shown);
}

/** A value named for a reader: strings quoted, numbers and the like as written, containers by kind. */
export function describedValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return quoted(value);
    case 'number':
    case 'boolean':
      return String(value);
    case 'bigint':
      return `the big integer ${String(value)}`;
    case 'undefined':
      return 'nothing';
    case 'symbol':
      return 'a symbol';
    case 'function':
      return 'a function';
    default:
      if (value === null) return 'null';
      return Array.isArray(value) ? 'an array' : 'an object';
  }
}
