import { describe, expect, it } from 'vitest';
import { formatBytes, Output, renderTable, textWithLineBreaks, type CliIo } from './output.ts';

function io(stdoutTty: boolean, stderrTty = stdoutTty): CliIo & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    stdout: { write: (text: string) => out.push(text), isTTY: stdoutTty },
    stderr: { write: (text: string) => err.push(text), isTTY: stderrTty },
    stdin: process.stdin,
  };
}

describe('Output', () => {
  it('prints tables on a terminal and JSON when piped, unless --output says otherwise', () => {
    const value = { name: 'prod' };
    const terminal = io(true);
    new Output(terminal, { mode: undefined, noColor: false, dumbTerminal: false }).data(value, () => 'name: prod');
    expect(terminal.out.join('')).toBe('name: prod\n');
    const piped = io(false);
    new Output(piped, { mode: undefined, noColor: false, dumbTerminal: false }).data(value, () => 'name: prod');
    expect(JSON.parse(piped.out.join(''))).toEqual(value);
    const forced = io(true);
    new Output(forced, { mode: 'json', noColor: false, dumbTerminal: false }).line(value, () => 'x');
    expect(forced.out).toEqual(['{"name":"prod"}\n']);
  });

  it('colours only a terminal, never with NO_COLOR or TERM=dumb', () => {
    expect(new Output(io(true), { mode: undefined, noColor: false, dumbTerminal: false }).status('failed')).toBe('\u001b[31mfailed\u001b[0m');
    expect(new Output(io(false), { mode: 'table', noColor: false, dumbTerminal: false }).status('failed')).toBe('failed');
    expect(new Output(io(true), { mode: undefined, noColor: true, dumbTerminal: false }).status('failed')).toBe('failed');
    expect(new Output(io(true), { mode: undefined, noColor: false, dumbTerminal: true }).status('failed')).toBe('failed');
  });

  it('writes progress, warnings and errors on stderr only', () => {
    const streams = io(false);
    const out = new Output(streams, { mode: undefined, noColor: false, dumbTerminal: false });
    out.info('Packed 3 files');
    out.warn('careful');
    out.error('not_found', 'Environment "x" was not found.', ['name: unknown']);
    expect(streams.out).toEqual([]);
    expect(streams.err.join('')).toBe('Packed 3 files\nwarning: careful\nerror: not_found: Environment "x" was not found.\n  - name: unknown\n');
  });
});

describe('renderTable', () => {
  it('pads columns to the widest cell and shows missing values as -', () => {
    expect(renderTable(['NAME', 'ACTIVE'], [['prod', 'dep_1'], ['staging-eu', null]])).toBe('NAME        ACTIVE\nprod        dep_1\nstaging-eu  -');
    expect(renderTable(['NAME'], [])).toBe('(none)');
  });
});

describe('formatBytes', () => {
  it('says a size in the largest unit under 1024 of it', () => {
    expect([812, 1229, 100 * 1024 * 1024, 3.4 * 1024 ** 3].map(formatBytes)).toEqual(['812 B', '1.2 KiB', '100.0 MiB', '3.4 GiB']);
  });
});

describe('textWithLineBreaks', () => {
  it('keeps the line breaks of a stack, indenting the lines after the first, and escapes every other control character', () => {
    expect(textWithLineBreaks('Error: boom\n    at fail (assets/x.js:2:9)\r\n    at run')).toBe('Error: boom\n      at fail (assets/x.js:2:9)\n      at run');
    expect(textWithLineBreaks('a\u001b[2Jb\n\rforged\u009b')).toBe('a\\e[2Jb\n  \\rforged\\x9b');
  });
});

describe('Output.table', () => {
  it('paints a coloured cell once on a terminal: an escape sequence, never its escaped text', () => {
    const out = new Output(io(true), { mode: undefined, noColor: false, dumbTerminal: false });
    const table = out.table(['KEY', 'STATUS'], [['orders', { text: 'latest', color: 'green' }]]);
    expect(table).toBe('KEY     STATUS\norders  \u001b[32mlatest\u001b[0m');
  });
});
