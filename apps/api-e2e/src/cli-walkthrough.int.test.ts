// The walk-through of docs/cli.md, run as a user runs it: each `$ ` line of the section's
// fenced blocks in order, in one shell state (working folder, exported variables, `$?`),
// on a pseudo-terminal (stdout and stderr together, tables by default, as the doc shows
// them), each output compared with the sample under its command after masking what varies
// from run to run. The doc is the only source of the commands and of what they print: a
// sample that goes stale fails here.
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { WORKSPACE_ROOT } from '@envengine/dev-stack';
import { createTenant } from '@envengine/test-harness';

const stack = inject('stack');
const DOC = 'docs/cli.md';
const SECTION = '## Walk-through: from `npm start` to a run, a contract failure and a rollback';
const CLI = join(WORKSPACE_ROOT, 'dist', 'apps', 'cli', 'main.js');
/** A line of a sample that stands for any number of lines (none included). */
const ANY_LINES = '…';
/** A sample's last line may end with the command's exit status, `(exit 4)`; without one it must be 0. */
const EXIT_NOTE = /\s+\(exit (\d+)\)$/;

// ---------------------------------------------------------------------------------------
// The section, read into steps.

type Step =
  | { kind: 'command'; line: number; command: string; expected: string[]; exit: number }
  | { kind: 'diff'; line: number; patch: string };

/** The walk-through's steps: `$ ` lines with the lines under them, and ```diff blocks (edits the reader makes). */
function walkthroughSteps(markdown: string): Step[] {
  const lines = markdown.split('\n');
  const start = lines.indexOf(SECTION);
  if (start === -1) throw new Error(`${DOC} has no section "${SECTION}"`);
  const endOffset = lines.slice(start + 1).findIndex((line) => line.startsWith('## '));
  const end = endOffset === -1 ? lines.length : start + 1 + endOffset;
  const steps: Step[] = [];
  for (let i = start + 1; i < end; i += 1) {
    const fence = /^```(\w*)$/.exec(lines[i]!);
    if (!fence) continue;
    const close = lines.findIndex((line, index) => index > i && line === '```');
    if (close === -1 || close >= end) throw new Error(`${DOC}:${i + 1}: a fenced block that is not closed in the section`);
    const body = lines.slice(i + 1, close);
    if (fence[1] === 'diff') {
      steps.push({ kind: 'diff', line: i + 1, patch: `${body.join('\n')}\n` });
    } else {
      steps.push(...commandsOf(body, i + 2));
    }
    i = close;
  }
  if (!steps.some((step) => step.kind === 'command')) throw new Error(`${DOC}: the section "${SECTION}" has no \`$ \` command`);
  return steps;
}

/** The commands of one block (`firstLine`: the doc's line number of its first line). */
function commandsOf(body: string[], firstLine: number): Step[] {
  const steps: Step[] = [];
  let current: Extract<Step, { kind: 'command' }> | undefined;
  for (let i = 0; i < body.length; i += 1) {
    const line = body[i]!;
    if (line.startsWith('$ ')) {
      let command = line.slice(2);
      const at = firstLine + i;
      // A line ending in `\` goes on.
      while (command.endsWith('\\') && i + 1 < body.length) command = `${command.slice(0, -1).trimEnd()} ${body[++i]!.trim()}`;
      current = { kind: 'command', line: at, command, expected: [], exit: 0 };
      steps.push(current);
    } else if (current) {
      current.expected.push(line);
    } else if (line.trim() !== '') {
      throw new Error(`${DOC}:${firstLine + i}: output before any \`$ \` command in its block`);
    }
  }
  for (const step of steps as Extract<Step, { kind: 'command' }>[]) {
    while (step.expected.length > 0 && step.expected[step.expected.length - 1]!.trim() === '') step.expected.pop();
    const last = step.expected.length - 1;
    const note = last >= 0 ? EXIT_NOTE.exec(step.expected[last]!) : null;
    if (note) {
      step.exit = Number(note[1]);
      step.expected[last] = step.expected[last]!.replace(EXIT_NOTE, '');
    }
  }
  return steps;
}

// ---------------------------------------------------------------------------------------
// What differs between the doc's `npm start` and this suite's stack: the only changes the
// test makes to the doc's commands, and the only values it puts back in their outputs.

interface Paths {
  /** The working folder the walk-through starts in: the repository, for the reader. */
  repository: string;
  /** The storage root's folder of this test's tenant (the stack's is shared by tenants). */
  lake: string;
  /** Stands for /tmp (the doc's scratch folder), so that two runs of this test never meet. */
  scratch: string;
  home: string;
}

function npmStartOnTheTestStack(paths: Paths) {
  return {
    /** Not run: the suite's stack is up already; envctl is on PATH (the built CLI). */
    notRun: [/^npm start$/, /^alias envctl=/],
    /** In the doc's commands, what they become here. */
    commands: [
      // envctl through npm is the same built CLI; login is given the stack's URL, which
      // the doc's login takes as the default (http://127.0.0.1:8080).
      ['npm run -s envctl -- login', `envctl login --url ${stack.gatewayUrl}`],
      ['$PWD/.envengine/lake/', `${paths.lake}/`],
      ['/tmp/envctl-walk', `${paths.scratch}/envctl-walk`],
    ] as const,
    /** In the outputs, the doc's values for this stack's (the doc's were on /work/main, as root). */
    outputs: [
      [stack.gatewayUrl, 'http://127.0.0.1:8080'],
      [paths.lake, '/work/main/.envengine/lake'],
      [paths.scratch, '/tmp'],
      [paths.home, '/root'],
      // The local worker's name is its host's name and its pid.
      [`${hostname()}-`, 'vm-'],
    ] as const,
  };
}

// ---------------------------------------------------------------------------------------
// Masks: what varies from run to run, matched in the actual output where the sample has it.

interface Mask {
  /** In the sample. */
  doc: RegExp;
  /** What may stand in its place in the output (a group: the value, remembered). */
  actual: (docValue: string) => string;
  /** The same doc value must be the same actual value throughout (ids, bundles). */
  kept?: (docValue: string) => string;
}

const MASKS: Mask[] = [
  // Resource ids: env_, dep_, run_, att_, mat_, tok_… (26 characters of Crockford base32).
  { doc: /\b[a-z]{2,5}_[0-9a-z]{26}\b/, actual: (value) => `${value.split('_')[0]}_[0-9a-z]{26}`, kept: (value) => value },
  // Bundles, in full or shortened: one bundle is one value in both forms.
  { doc: /sha256:[0-9a-f]{12,64}/, actual: (value) => `sha256:[0-9a-f]{${value.length - 7}}`, kept: (value) => value.slice(0, 19) },
  { doc: /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\b/, actual: () => '\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?Z' },
  { doc: /\b\d{2}:\d{2}:\d{2}\.\d{3}\b/, actual: () => '\\d{2}:\\d{2}:\\d{2}\\.\\d{3}' },
  { doc: /\b\d+(?:\.\d+)? ?m?s\b/, actual: () => '\\d+(?:\\.\\d+)? ?m?s' },
  // A worker's pid.
  { doc: /\bvm-\d+\b/, actual: () => 'vm-\\d+' },
];

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A sample line as a pattern: masks where they match, runs of two spaces or more (table padding) as any such run. */
function linePattern(docLine: string): { pattern: RegExp; masked: { mask: Mask; value: string }[] } {
  const any = new RegExp(MASKS.map((mask) => `(${mask.doc.source})`).join('|'), 'g');
  const masked: { mask: Mask; value: string }[] = [];
  let source = '';
  let last = 0;
  const literal = (text: string) => escapeRegExp(text).replace(/ {2,}/g, ' {2,}');
  for (const match of docLine.matchAll(any)) {
    const mask = MASKS.find((candidate) => new RegExp(`^(?:${candidate.doc.source})$`).test(match[0]))!;
    source += `${literal(docLine.slice(last, match.index))}(${mask.actual(match[0])})`;
    masked.push({ mask, value: match[0] });
    last = match.index + match[0].length;
  }
  source += literal(docLine.slice(last));
  return { pattern: new RegExp(`^${source}$`), masked };
}

/** Each doc value of a kept mask and the actual value it stood for, both ways. */
class Correspondence {
  readonly toActual = new Map<string, string>();
  private readonly toDoc = new Map<string, string>();

  /** Null when consistent, else why not. */
  record(docValue: string, actualValue: string): string | null {
    const before = this.toActual.get(docValue);
    if (before !== undefined && before !== actualValue) return `the doc's ${docValue} was ${before} before, and is ${actualValue} here`;
    const other = this.toDoc.get(actualValue);
    if (other !== undefined && other !== docValue) return `${actualValue} stood for the doc's ${other} before, and for ${docValue} here`;
    this.toActual.set(docValue, actualValue);
    this.toDoc.set(actualValue, docValue);
    return null;
  }
}

/**
 * The output as the doc would show it: each line that matches its sample line (masks
 * applied) replaced by that sample line, lines under `…` left out; other lines as they
 * came. It equals the sample exactly when the output matches it.
 */
function asTheDocShowsIt(expected: string[], actual: string[], ids: Correspondence): { shown: string[]; problems: string[] } {
  const patterns = expected.map((line) => (line === ANY_LINES ? null : linePattern(line)));
  const shown: string[] = [];
  const problems: string[] = [];
  const emittedWildcards = new Set<number>();
  const wildcard = (index: number) => {
    if (!emittedWildcards.has(index)) shown.push(ANY_LINES);
    emittedWildcards.add(index);
  };
  let p = 0;
  for (const line of actual) {
    let j = p;
    let match: RegExpExecArray | null = null;
    for (; j < expected.length; j += 1) {
      const pattern = patterns[j];
      if (pattern && (match = pattern.pattern.exec(line))) break;
    }
    if (match) {
      for (let k = p; k < j; k += 1) if (patterns[k] === null) wildcard(k);
      const { masked } = patterns[j]!;
      masked.forEach(({ mask, value }, index) => {
        if (!mask.kept) return;
        const problem = ids.record(mask.kept(value), mask.kept(match![index + 1]!));
        if (problem) problems.push(problem);
      });
      shown.push(expected[j]!);
      p = j + 1;
    } else if (p < expected.length && patterns[p] === null) {
      wildcard(p);
    } else if (p === expected.length && p > 0 && patterns[p - 1] === null) {
      // Under a trailing `…`.
    } else {
      shown.push(line);
    }
  }
  for (let k = p; k < expected.length; k += 1) if (patterns[k] === null) wildcard(k);
  return { shown, problems };
}

// ---------------------------------------------------------------------------------------
// The shell: each command in `bash` on a pseudo-terminal, the state carried from one to the next.

/**
 * What a terminal shows of what it was sent: carriage returns and "erase to the end of
 * the line" applied (the run's status line is rewritten in place and cleared), colours
 * dropped.
 */
function terminalScreen(bytes: string): string[] {
  return bytes
    .replace(/\r\n/g, '\n')
    .split('\n')
    .map((raw) => {
      let line = '';
      let cursor = 0;
      for (const token of raw.match(/\u001b\[[0-9;?]*[A-Za-z]|\r|[^\u001b\r]+|\u001b/g) ?? []) {
        if (token === '\r') cursor = 0;
        else if (token === '\u001b[K' || token === '\u001b[0K') line = line.slice(0, cursor);
        else if (token.startsWith('\u001b')) continue;
        else {
          line = line.slice(0, cursor) + token + line.slice(cursor + token.length);
          cursor += token.length;
        }
      }
      return line.trimEnd();
    });
}

class Shell {
  private step = 0;

  constructor(
    private readonly stateDir: string,
    env: Record<string, string>,
    cwd: string,
  ) {
    writeFileSync(join(stateDir, 'env'), Object.entries(env).map(([name, value]) => `export ${name}=${shellWord(value)}\n`).join(''));
    writeFileSync(join(stateDir, 'cwd'), cwd);
    writeFileSync(join(stateDir, 'status'), '0');
  }

  get cwd(): string {
    return readFileSync(join(this.stateDir, 'cwd'), 'utf8').trim();
  }

  /** Runs `command` as the next line typed at the prompt: the screen it leaves, and its exit status. */
  run(command: string, input?: string): Promise<{ screen: string[]; status: number | null; raw: string }> {
    const state = this.stateDir;
    const script = join(state, `step-${(this.step += 1)}.sh`);
    writeFileSync(
      script,
      [
        `source ${shellWord(join(state, 'env'))}`,
        `cd "$(cat ${shellWord(join(state, 'cwd'))})" || exit 99`,
        `(exit "$(cat ${shellWord(join(state, 'status'))})")`,
        command,
        '__walk_status=$?',
        `pwd > ${shellWord(join(state, 'cwd'))}`,
        `export -p > ${shellWord(join(state, 'env'))}`,
        `echo "$__walk_status" > ${shellWord(join(state, 'status'))}`,
        'exit "$__walk_status"',
        '',
      ].join('\n'),
    );
    // stdin is the terminal unless the step brings its own (a diff for `patch`).
    const line = input === undefined ? `stty cols 200 rows 50; exec bash ${shellWord(script)}` : `stty cols 200 rows 50; exec bash ${shellWord(script)} < ${shellWord(`${script}.in`)}`;
    if (input !== undefined) writeFileSync(`${script}.in`, input);
    return new Promise((resolve, reject) => {
      const child = spawn('script', ['-qefc', line, '/dev/null'], { env: { PATH: process.env.PATH ?? '', TERM: 'xterm' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let raw = '';
      child.stdout.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      child.on('error', reject);
      child.on('close', (status) => resolve({ screen: terminalScreen(raw), status, raw }));
    });
  }
}

const shellWord = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;

function replaceAll(text: string, pairs: readonly (readonly [string, string])[]): string {
  return pairs.reduce((result, [from, to]) => result.split(from).join(to), text);
}

// ---------------------------------------------------------------------------------------

let steps: Step[] = [];
let parseError: Error | undefined;
try {
  steps = walkthroughSteps(readFileSync(join(WORKSPACE_ROOT, DOC), 'utf8'));
} catch (error) {
  parseError = error as Error;
}

describe(`the walk-through of ${DOC}`, () => {
  let shell: Shell;
  let mapping: ReturnType<typeof npmStartOnTheTestStack>;
  const ids = new Correspondence();
  let failed: string | undefined;

  beforeAll(async () => {
    const tenant = await createTenant(stack, 'walkthrough');
    const root = mkdtempSync(join(tmpdir(), 'envctl-walkthrough-'));
    const paths: Paths = { repository: join(root, 'repository'), lake: join(stack.dataDir, 'lake', tenant.tenantId), scratch: join(root, 'tmp'), home: join(root, 'home') };
    for (const dir of [paths.scratch, paths.home, join(root, 'bin'), join(root, 'state'), join(paths.repository, '.envengine')]) mkdirSync(dir, { recursive: true });
    // The repository, as far as the walk-through reads it: the example, and the token `npm start` writes (a fresh tenant's here).
    cpSync(join(WORKSPACE_ROOT, 'examples', 'orders'), join(paths.repository, 'examples', 'orders'), { recursive: true });
    writeFileSync(join(paths.repository, '.envengine', 'dev-token'), `${tenant.token}\n`, { mode: 0o600 });
    // envctl: the built CLI, as `tools/run.sh envctl` runs it.
    const envctl = join(root, 'bin', 'envctl');
    writeFileSync(envctl, `#!/bin/sh\nexec ${shellWord(process.execPath)} ${shellWord(CLI)} "$@"\n`);
    chmodSync(envctl, 0o755);
    mapping = npmStartOnTheTestStack(paths);
    shell = new Shell(
      join(root, 'state'),
      // The reader's shell: their HOME, and the example's API key in ORDERS_API_KEY.
      { PATH: `${join(root, 'bin')}:${process.env.PATH ?? ''}`, HOME: paths.home, TERM: 'xterm', LANG: 'C.UTF-8', ORDERS_API_KEY: `walkthrough-${tenant.tenantId}` },
      paths.repository,
    );
  });

  it('has commands to run', () => {
    expect(parseError?.message).toBeUndefined();
    expect(steps.filter((step) => step.kind === 'command').length).toBeGreaterThan(0);
  });

  for (const step of steps) {
    const name = step.kind === 'command' ? `${DOC}:${step.line} $ ${step.command}` : `${DOC}:${step.line} the change in the diff, made with patch -p1`;
    it(name, async (context) => {
      if (failed) context.skip(`an earlier step failed (${failed})`);
      failed = name;
      if (step.kind === 'diff') {
        const applied = await shell.run('patch -p1 --forward --no-backup-if-mismatch', step.patch);
        expect(applied.status, `${name}: patch in ${shell.cwd} failed:\n${applied.screen.join('\n')}`).toBe(0);
        failed = undefined;
        return;
      }
      if (mapping.notRun.some((pattern) => pattern.test(step.command))) {
        failed = undefined;
        context.skip('stands for something the suite has done already (npmStartOnTheTestStack)');
      }
      // Ids the doc's command names are those an earlier sample printed: here, the ones printed in their place.
      let command = step.command;
      for (const id of step.command.match(new RegExp(MASKS[0]!.doc.source, 'g')) ?? []) {
        const actual = ids.toActual.get(id);
        if (!actual) throw new Error(`${name}: names ${id}, which no earlier sample of the walk-through printed`);
        command = command.split(id).join(actual);
      }
      command = replaceAll(command, mapping.commands);
      const result = await shell.run(command);
      // An exit status other than the doc's leaves the walk-through somewhere else than the
      // doc: the later steps are skipped. A stale sample alone does not.
      expect(result.status, `${name}: exit status (the sample says ${step.exit === 0 ? 'none, so 0' : `(exit ${step.exit})`}); it printed:\n${result.screen.join('\n')}`).toBe(step.exit);
      failed = undefined;
      const output = result.screen.map((line) => replaceAll(line, mapping.outputs));
      while (output.length > 0 && output[output.length - 1] === '') output.pop();
      const { shown, problems } = asTheDocShowsIt(step.expected, output, ids);
      expect(shown.join('\n'), `${name}: its output (masked) is not the sample's; - the doc, + what it printed`).toBe(step.expected.join('\n'));
      expect(problems, `${name}: the ids of its output do not stand where the doc's did`).toEqual([]);
    });
  }
});
