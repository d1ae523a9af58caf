import { escapeControlCharacters } from '@envengine/terminal-text';
/** The streams envctl talks through; tests pass their own. */
export interface CliIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean; columns?: number };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
}

export type OutputMode = 'table' | 'json';

export interface OutputOptions {
  /** `--output`; default: table on a terminal, json when stdout is piped. */
  mode: OutputMode | undefined;
  noColor: boolean;
  dumbTerminal: boolean;
}

const COLORS = { red: 31, green: 32, yellow: 33, blue: 34, dim: 2, bold: 1 } as const;
export type Color = keyof typeof COLORS;

/** A size for a person: `812 B`, `1.2 KiB`, `100.0 MiB`, `3.4 GiB`. */
export function formatBytes(bytes: number): string {
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/** Colour of a status word wherever it is shown. */
export function statusColor(status: string): Color | undefined {
  if (['ready', 'succeeded', 'active', 'live', 'latest'].includes(status)) return 'green';
  if (['failed', 'lost', 'quarantined', 'canceled'].includes(status)) return 'red';
  if (['running', 'queued', 'pending', 'read_only'].includes(status)) return 'yellow';
  return undefined;
}

export type Cell = string | number | boolean | null | undefined | { text: string; color?: Color };

/** A cell as shown: the engine's and tenants' strings with their control characters escaped (a log line or an error cannot drive the terminal). */
function cellText(cell: Cell): string {
  if (cell === null || cell === undefined) return '-';
  if (typeof cell === 'object') return escapeControlCharacters(cell.text);
  return escapeControlCharacters(String(cell));
}

/**
 * A tenant's text of several lines (an error's stack, a log line's) with real line breaks,
 * every other control character escaped as `escapeControlCharacters` does; each line after
 * the first is indented by two spaces, so that none can pass for a line of envctl's own
 * (a log line's time stamp, an `error:`).
 */
export function textWithLineBreaks(text: string): string {
  return text
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((line, index) => (index === 0 ? '' : '  ') + escapeControlCharacters(line))
    .join('\n');
}

/**
 * JSON as envctl prints it: JSON.stringify escapes C0 controls, but leaves C1 controls
 * (U+009B is a CSI to some terminals) and bidirectional overrides raw; those are written
 * as \u escapes too, which JSON readers decode the same.
 */
export function terminalSafeJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Data on stdout, progress and errors on stderr; tables on a terminal, JSON when piped;
 * colour only on a terminal and never with NO_COLOR.
 */
export class Output {
  readonly mode: OutputMode;
  private readonly colorOut: boolean;
  private readonly colorErr: boolean;

  constructor(
    readonly io: CliIo,
    options: OutputOptions,
  ) {
    this.mode = options.mode ?? (io.stdout.isTTY ? 'table' : 'json');
    const colorAllowed = !options.noColor && !options.dumbTerminal;
    this.colorOut = colorAllowed && io.stdout.isTTY === true;
    this.colorErr = colorAllowed && io.stderr.isTTY === true;
  }

  get json(): boolean {
    return this.mode === 'json';
  }

  get stderrIsTty(): boolean {
    return this.io.stderr.isTTY === true;
  }

  paint(text: string, color: Color | undefined, stream: 'out' | 'err' = 'out'): string {
    const enabled = stream === 'out' ? this.colorOut : this.colorErr;
    return enabled && color ? `\u001b[${COLORS[color]}m${text}\u001b[0m` : text;
  }

  /** A status word, coloured by what it means. */
  status(status: string, stream: 'out' | 'err' = 'out'): string {
    return this.paint(status, statusColor(status), stream);
  }

  /** One document of data: JSON in json mode, else what `render` makes of it. */
  data(value: unknown, render: () => string): void {
    this.io.stdout.write(this.json ? `${terminalSafeJson(value, 2)}\n` : ensureNewline(render()));
  }

  /** One line of a stream (NDJSON in json mode). */
  line(value: unknown, render: () => string): void {
    this.io.stdout.write(this.json ? `${terminalSafeJson(value)}\n` : ensureNewline(render()));
  }

  /** Progress and notes for a person: stderr, never stdout. */
  info(text: string): void {
    this.io.stderr.write(ensureNewline(text));
  }

  warn(text: string): void {
    this.io.stderr.write(`${this.paint('warning', 'yellow', 'err')}: ${escapeControlCharacters(text)}\n`);
  }

  error(code: string, message: string, details: readonly string[] = []): void {
    this.io.stderr.write(`${this.paint('error', 'red', 'err')}: ${escapeControlCharacters(code)}: ${escapeControlCharacters(message)}\n`);
    for (const detail of details) this.io.stderr.write(`  - ${escapeControlCharacters(detail)}\n`);
  }

  /** Columns padded to their widest cell, a header line, no borders. */
  table(headers: readonly string[], rows: ReadonlyArray<readonly Cell[]>): string {
    return renderTable(headers, rows, (cell, text) => (typeof cell === 'object' && cell !== null ? this.paint(text, cell.color) : text));
  }

  /** `key: value` lines for one object. */
  fields(entries: ReadonlyArray<readonly [string, Cell]>): string {
    const width = Math.max(...entries.map(([key]) => key.length));
    return entries
      .map(([key, cell]) => {
        const text = cellText(cell);
        return `${`${key}:`.padEnd(width + 2)}${typeof cell === 'object' && cell !== null ? this.paint(text, cell.color) : text}`;
      })
      .join('\n');
  }
}

export function renderTable(headers: readonly string[], rows: ReadonlyArray<readonly Cell[]>, paint: (cell: Cell, text: string) => string = (_cell, text) => text): string {
  if (rows.length === 0) return '(none)';
  const texts = rows.map((row) => row.map(cellText));
  const widths = headers.map((header, column) => Math.max(header.length, ...texts.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[], raw: readonly Cell[] | undefined) =>
    cells
      .map((text, column) => {
        const padded = column === cells.length - 1 ? text : text.padEnd(widths[column]!);
        return raw ? paint(raw[column], padded) : padded;
      })
      .join('  ')
      .trimEnd();
  return [line(headers, undefined), ...texts.map((row, index) => line(row, rows[index]))].join('\n');
}

function ensureNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}
