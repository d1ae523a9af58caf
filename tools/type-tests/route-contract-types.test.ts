import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

/**
 * A change to a contract breaks the build of every client that uses it: each folder of
 * `fixtures/` is a client of `requestRoute`, compiled alone with `tsc --noEmit -p`. One
 * that marks no line must compile; every other must fail with exactly the errors its
 * lines mark (`// expect-error TS2353`), at those lines. The fixtures are `.mts` so that
 * the tools project's own typecheck (`**\/*.ts`) does not compile the failing ones.
 */
const FIXTURES = fileURLToPath(new URL('fixtures', import.meta.url));
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

interface Diagnostic {
  line: number;
  code: string;
}

const fixtures = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => {
    const lines = readFileSync(join(FIXTURES, entry.name, 'fixture.mts'), 'utf8').split('\n');
    const expected = lines.flatMap((text, index): Diagnostic[] => {
      const code = /\/\/ expect-error (TS\d+)\s*$/.exec(text)?.[1];
      return code ? [{ line: index + 1, code }] : [];
    });
    return { name: entry.name, expected };
  });

function compile(name: string): Promise<{ exitCode: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [TSC, '--noEmit', '--pretty', 'false', '-p', join(FIXTURES, name, 'tsconfig.json')], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ exitCode: error ? (typeof error.code === 'number' ? error.code : 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

/** `fixture.mts(6,90): error TS2353: …` → the line and code; an error in any other file is kept whole, to fail the test. */
function diagnosticsOf(output: string): Array<Diagnostic | string> {
  return output
    .split('\n')
    .filter((line) => /error TS\d+/.test(line))
    .map((line) => {
      const match = /fixture\.mts\((\d+),\d+\): error (TS\d+):/.exec(line);
      return match ? { line: Number(match[1]), code: match[2]! } : line;
    });
}

const results = new Map<string, { exitCode: number; output: string }>();

beforeAll(async () => {
  // Two at a time: each tsc loads the contracts and zod, on a machine of two cores.
  const queue = fixtures.map((fixture) => fixture.name);
  const worker = async () => {
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) results.set(name, await compile(name));
  };
  await Promise.all([worker(), worker()]);
}, 300_000);

describe('a client of a route contract, compiled with tsc', () => {
  it('has fixtures that must compile and fixtures that must not', () => {
    expect(fixtures.filter((fixture) => fixture.expected.length === 0).length).toBeGreaterThan(0);
    expect(fixtures.filter((fixture) => fixture.expected.length > 0).length).toBeGreaterThanOrEqual(4);
  });

  for (const fixture of fixtures) {
    const title = fixture.expected.length === 0 ? `compiles ${fixture.name}` : `refuses ${fixture.name} (${fixture.expected.map((diagnostic) => `${diagnostic.code} at line ${diagnostic.line}`).join(', ')})`;
    it(title, () => {
      const result = results.get(fixture.name)!;
      expect(diagnosticsOf(result.output), result.output).toEqual(fixture.expected);
      expect(result.exitCode === 0, result.output).toBe(fixture.expected.length === 0);
    });
  }
});
