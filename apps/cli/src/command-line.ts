import { parseArgs } from 'node:util';
import { closestName, didYouMean } from '@envengine/name-suggestions';
import { usageError, type ExitCode } from './exit-codes.ts';
import type { CommandContext } from './command-context.ts';

export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** Shown in help, e.g. `NAME`. */
  value?: string;
  description: string;
}

export type OptionValues = Record<string, string | boolean | string[] | undefined>;

export interface ParsedInput {
  values: OptionValues;
  positionals: string[];
}

export interface CommandSpec {
  /** The words that name the command, e.g. `['env', 'list']`. */
  path: readonly string[];
  summary: string;
  /** Positionals as help shows them, e.g. `NAME` or `[DIR]`. */
  args?: string;
  positionals?: { min: number; max: number };
  /**
   * Said instead of echoing an argument beyond `positionals.max`, for a command where such
   * an argument is likely a secret (`secrets set NAME VALUE`): an echo would put it in CI logs.
   */
  extraArgumentRefusal?: string;
  options?: Record<string, OptionSpec>;
  /**
   * What the global `--output` takes here when not only `table|json`: the formats it
   * accepts (a preview's `csv`), or any value when none are listed (a download's FILE).
   */
  output?: { value: string; description: string; formats?: readonly string[] };
  run(ctx: CommandContext, input: ParsedInput): Promise<ExitCode | void>;
}

/** Options every command takes. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  url: { type: 'string', value: 'URL', description: 'API URL (else ENVCTL_URL, the config file, http://127.0.0.1:8080)' },
  'token-file': { type: 'string', value: 'FILE', description: 'read the API token from FILE (else ENVCTL_TOKEN, the config file)' },
  token: { type: 'string', value: 'TOKEN', description: 'API token; visible to other users in the process list: prefer ENVCTL_TOKEN or --token-file' },
  output: { type: 'string', short: 'o', value: 'table|json', description: 'output format (default: table on a terminal, json when piped)' },
  'no-color': { type: 'boolean', description: 'no colour (also NO_COLOR)' },
  help: { type: 'boolean', short: 'h', description: 'show help' },
};

export type Parsed =
  | { kind: 'help'; text: string }
  | { kind: 'version' }
  | { kind: 'run'; command: CommandSpec; input: ParsedInput };

const takesValue = (name: string, options: Record<string, OptionSpec>) => options[name]?.type === 'string';

function optionNameOf(token: string, options: Record<string, OptionSpec>): string | undefined {
  if (token.startsWith('--')) return token.slice(2).split('=')[0];
  if (token.length === 2) return Object.entries(options).find(([, spec]) => spec.short === token[1])?.[0];
  return undefined;
}

/**
 * Finds the command (its words may follow global options) and parses the rest with
 * `util.parseArgs`, strictly: an unknown option or a missing value is a usage error.
 */
export function parseCommandLine(argv: readonly string[], commands: readonly CommandSpec[]): Parsed {
  const words: string[] = [];
  const rest: string[] = [];
  let helpWord = false;
  let wantWords = true;
  for (let index = 0; index < argv.length; index += 1) {
    const token = argv[index]!;
    if (wantWords && !token.startsWith('-')) {
      const candidate = [...words, token];
      if (commands.some((command) => startsWith(command.path, candidate))) {
        words.push(token);
        // No command's words are a prefix of another's, so a full match ends the words.
        if (commands.some((command) => command.path.length === words.length && startsWith(command.path, words))) wantWords = false;
        continue;
      }
      if (words.length === 0 && token === 'help' && !helpWord) {
        helpWord = true;
        continue;
      }
      wantWords = false;
    }
    rest.push(token);
    // A global option's value, given as the next argument, is not a command word.
    const name = token.startsWith('-') && !token.includes('=') ? optionNameOf(token, GLOBAL_OPTIONS) : undefined;
    if (name && takesValue(name, GLOBAL_OPTIONS) && index + 1 < argv.length) rest.push(argv[(index += 1)]!);
  }
  if (words.length === 0 && rest.includes('--version')) return { kind: 'version' };
  const asksHelp = helpWord || rest.includes('--help') || rest.includes('-h');
  const matched = commands.find((command) => command.path.length === words.length && startsWith(command.path, words));
  if (!matched) {
    const group = commands.filter((command) => startsWith(command.path, words));
    if (asksHelp || argv.length === 0) return { kind: 'help', text: overview(group) };
    // The word where the command stopped matching, if any: a typo gets a suggestion.
    const next = rest.find((token) => !token.startsWith('-'));
    const nextWords = [...new Set(group.map((command) => command.path[words.length]).filter((word): word is string => word !== undefined))];
    if (words.length > 0) {
      const suggestion = next === undefined ? undefined : closestName(next, nextWords);
      // One line, as every error is (a help text here would be escaped into one line of `\n`s).
      const see = `see envctl ${words.join(' ')} --help`;
      if (next !== undefined && suggestion !== undefined) {
        throw usageError(`unknown command "envctl ${[...words, next].join(' ')}". Did you mean "envctl ${[...words, suggestion].join(' ')}"? (${see})`);
      }
      throw usageError(`"envctl ${words.join(' ')}" needs a subcommand${next === undefined ? '' : ` ("${next}" is not one)`}: ${nextWords.join(', ')}; ${see}`);
    }
    throw usageError(next ? `unknown command "${next}".${didYouMean(next, nextWords)} See envctl --help` : 'no command given; see envctl --help');
  }
  if (asksHelp) return { kind: 'help', text: commandHelp(matched) };
  const options = { ...GLOBAL_OPTIONS, ...matched.options };
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: Object.fromEntries(
        Object.entries(options).map(([name, spec]) => [name, { type: spec.type, ...(spec.short ? { short: spec.short } : {}), ...(spec.multiple ? { multiple: true } : {}) }]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    const message = (error as Error).message.replace(/\. To specify a positional argument.*$/s, '');
    // "Unknown option '--alow-contract-change'": the closest option of the command, if one is close.
    const unknown = /^Unknown option '--([^']+)'/.exec(message)?.[1];
    const hint = unknown === undefined ? '' : didYouMean(unknown, Object.keys(options)).replace(/"([^"]+)"/, '"--$1"');
    throw usageError(`${message}.${hint} See envctl ${matched.path.join(' ')} --help`);
  }
  const positionals = parsed.positionals;
  const { min, max } = matched.positionals ?? { min: 0, max: 0 };
  if (positionals.length < min) throw usageError(`envctl ${matched.path.join(' ')} needs ${matched.args ?? `${min} argument(s)`}; see envctl ${matched.path.join(' ')} --help`);
  if (positionals.length > max) {
    if (matched.extraArgumentRefusal) throw usageError(`envctl ${matched.path.join(' ')} takes ${max} argument(s); ${matched.extraArgumentRefusal} (the extra argument is not shown)`);
    throw usageError(`unexpected argument "${positionals[max]}" for envctl ${matched.path.join(' ')}`);
  }
  // Options marked required are named, flag and value, before anything else checks the input.
  const missing = Object.entries(matched.options ?? {})
    .filter(([name, spec]) => spec.description.startsWith('(required)') && (parsed.values[name] === undefined || parsed.values[name] === ''))
    .map(([name, spec]) => `--${name}${spec.value ? ` ${spec.value}` : ''}`);
  if (missing.length > 0) throw usageError(`envctl ${matched.path.join(' ')} needs ${missing.join(' and ')}; see envctl ${matched.path.join(' ')} --help`);
  const output = parsed.values.output;
  const formats = matched.output ? matched.output.formats : ['table', 'json'];
  if (output !== undefined && formats !== undefined && !formats.includes(String(output))) {
    throw usageError(`--output must be ${formats.map((format) => `"${format}"`).join(', ').replace(/, ([^,]*)$/, ' or $1')}, not "${String(output)}"`);
  }
  return { kind: 'run', command: matched, input: { values: parsed.values as OptionValues, positionals } };
}

function startsWith(path: readonly string[], words: readonly string[]): boolean {
  return words.every((word, index) => path[index] === word);
}

function usageLine(command: CommandSpec): string {
  const required = Object.entries(command.options ?? {})
    .filter(([, spec]) => spec.description.startsWith('(required)'))
    .map(([name, spec]) => `--${name} ${spec.value ?? ''}`.trim());
  return ['envctl', ...command.path, ...(command.args ? [command.args] : []), ...required, '[options]'].join(' ');
}

export function overview(commands: readonly CommandSpec[]): string {
  const lines = commands.map((command) => [`  ${[...command.path, command.args ?? ''].join(' ').trim()}`, command.summary] as const);
  const width = Math.max(...lines.map(([left]) => left.length));
  return [
    'usage: envctl <command> [options]',
    '',
    'commands:',
    ...lines.map(([left, summary]) => `${left.padEnd(width + 2)}${summary}`),
    '',
    'global options:',
    ...optionLines(GLOBAL_OPTIONS),
    '',
    'Exit codes: 0 ok, 1 failed, 2 usage, 3 authentication, 4 not found, 5 unreachable, 6 timed out.',
    'envctl <command> --help shows a command\'s options.',
  ].join('\n');
}

function optionLines(options: Record<string, OptionSpec>): string[] {
  const entries = Object.entries(options).map(([name, spec]) => [`  ${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.value ? ` ${spec.value}` : ''}${spec.multiple ? ' ...' : ''}`, spec.description] as const);
  const width = Math.max(...entries.map(([left]) => left.length));
  return entries.map(([left, description]) => `${left.padEnd(width + 2)}${description}`);
}

export function commandHelp(command: CommandSpec): string {
  return [
    `usage: ${usageLine(command)}`,
    '',
    command.summary,
    ...(command.options && Object.keys(command.options).length > 0 ? ['', 'options:', ...optionLines(command.options)] : []),
    '',
    'global options:',
    ...optionLines(command.output ? { ...GLOBAL_OPTIONS, output: { ...GLOBAL_OPTIONS['output']!, value: command.output.value, description: command.output.description } } : GLOBAL_OPTIONS),
  ].join('\n');
}

/** Readers of parsed option values. */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** `"a"`, `"a" or "b"`, `"a", "b" or "c"`. */
function alternatives(choices: readonly string[]): string {
  return choices.map((choice) => `"${choice}"`).join(', ').replace(/, ([^,]*)$/, ' or $1');
}

/** A value that must be one of `choices`; a typo of one gets it suggested (`--executor lcoal`: did you mean "local"?). */
export function choiceValue<const T extends string>(what: string, raw: string, choices: readonly T[]): T {
  if ((choices as readonly string[]).includes(raw)) return raw as T;
  throw usageError(`${what} is ${alternatives(choices)}, not "${raw}".${didYouMean(raw, choices)}`);
}

/** An option whose value must be one of `choices`, or undefined when it is not given. */
export function choiceOption<const T extends string>(values: OptionValues, name: string, choices: readonly T[]): T | undefined {
  const raw = stringOption(values, name);
  return raw === undefined ? undefined : choiceValue(`--${name}`, raw, choices);
}

export function requiredOption(values: OptionValues, name: string, command: string): string {
  const value = stringOption(values, name);
  if (value === undefined || value === '') throw usageError(`envctl ${command} needs --${name}`);
  return value;
}

export function listOption(values: OptionValues, name: string): string[] {
  const value = values[name];
  return Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
}

export function flagOption(values: OptionValues, name: string): boolean {
  return values[name] === true;
}

export function integerOption(values: OptionValues, name: string, { min, max }: { min: number; max: number }): number | undefined {
  const raw = stringOption(values, name);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw usageError(`--${name} must be a whole number from ${min} to ${max}, not "${raw}"`);
  return value;
}
