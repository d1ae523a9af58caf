import { describe, expect, it } from 'vitest';
import { COMMANDS } from './cli.ts';
import { GLOBAL_OPTIONS, parseCommandLine } from './command-line.ts';
import { CliError } from './exit-codes.ts';

function run(argv: string[]) {
  const parsed = parseCommandLine(argv, COMMANDS);
  if (parsed.kind !== 'run') throw new Error(`expected a command, got ${parsed.kind}`);
  return { path: parsed.command.path.join(' '), ...parsed.input };
}

function usage(argv: string[]): string {
  try {
    parseCommandLine(argv, COMMANDS);
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(2);
    return (error as CliError).message;
  }
  throw new Error(`expected a usage error for ${argv.join(' ')}`);
}

describe('parseCommandLine', () => {
  it('finds multi-word commands, their options and positionals', () => {
    expect(run(['env', 'get', 'prod'])).toMatchObject({ path: 'env get', positionals: ['prod'] });
    expect(run(['pool', 'credentials', 'revoke', 'pcr_1'])).toMatchObject({ path: 'pool credentials revoke', positionals: ['pcr_1'] });
    const deploy = run(['deploy', 'examples/orders', '--env', 'prod', '--allow-contract-change', 'orders', '--allow-contract-change', 'raw', '--no-activate']);
    expect(deploy).toMatchObject({ path: 'deploy', positionals: ['examples/orders'] });
    expect(deploy.values).toMatchObject({ env: 'prod', 'allow-contract-change': ['orders', 'raw'], 'no-activate': true });
  });

  it('takes global options before, among and after the command words', () => {
    expect(run(['-o', 'json', 'env', 'list']).values.output).toBe('json');
    expect(run(['--url', 'http://x', 'runs', 'watch', 'run_1']).values.url).toBe('http://x');
    expect(run(['runs', '--output=table', 'get', 'run_1'])).toMatchObject({ path: 'runs get', values: { output: 'table' } });
    expect(run(['env', 'list', '--no-color']).values['no-color']).toBe(true);
  });

  it('answers help for --help, help and no arguments; the version for --version', () => {
    expect(parseCommandLine([], COMMANDS).kind).toBe('help');
    expect(parseCommandLine(['help'], COMMANDS).kind).toBe('help');
    const envHelp = parseCommandLine(['env', '--help'], COMMANDS);
    expect(envHelp.kind === 'help' && envHelp.text).toContain('env create NAME');
    const deployHelp = parseCommandLine(['deploy', '-h'], COMMANDS);
    expect(deployHelp.kind === 'help' && deployHelp.text).toContain('--allow-contract-change KEY ...');
    expect(parseCommandLine(['--version'], COMMANDS).kind).toBe('version');
  });

  it('refuses what it does not know with a usage error (exit 2)', () => {
    expect(usage(['nope'])).toContain('unknown command "nope"');
    expect(usage(['env'])).toContain('needs a subcommand');
    expect(usage(['env', 'get'])).toContain('needs NAME');
    expect(usage(['env', 'get', 'a', 'b'])).toContain('unexpected argument "b"');
    expect(usage(['env', 'list', '--bogus'])).toContain("Unknown option '--bogus'");
    expect(usage(['deploy', '--env'])).toContain('--env <value>\' argument missing');
    expect(usage(['env', 'list', '-o', 'yaml'])).toContain('--output must be "table" or "json"');
    expect(usage(['env', 'list', '-o', 'csv'])).toContain('--output must be "table" or "json"');
    expect(usage(['assets', 'preview', 'k', '--env', 'p', '-o', 'yaml'])).toContain('--output must be "table", "json" or "csv"');
  });

  it('suggests the closest command, subcommand or flag for a typo, and nothing for a word far from all', () => {
    expect(usage(['evn', 'list'])).toContain('unknown command "evn". Did you mean "env"?');
    expect(usage(['env', 'lst'])).toContain('unknown command "envctl env lst". Did you mean "envctl env list"?');
    expect(usage(['runs', 'strat', '--env', 'p'])).toContain('Did you mean "envctl runs start"?');
    expect(usage(['deploy', '.', '--env', 'p', '--alow-contract-change', 'orders'])).toContain(`Unknown option '--alow-contract-change'. Did you mean "--allow-contract-change"?`);
    expect(usage(['frobnicate'])).toBe('unknown command "frobnicate". See envctl --help');
    expect(usage(['env', 'zzzzzz'])).toContain('"envctl env" needs a subcommand ("zzzzzz" is not one)');
    // One line, as the docs show it: a help text here was printed as one line of literal `\n`s.
    expect(usage(['env', 'lst'])).toBe('unknown command "envctl env lst". Did you mean "envctl env list"? (see envctl env --help)');
    expect(usage(['env', 'zzzzzz'])).toMatch(/^"envctl env" needs a subcommand \("zzzzzz" is not one\): list, get, create, [^\n]*; see envctl env --help$/);
    expect(usage(['runs'])).not.toContain('\n');
    expect(usage(['env', 'list', '--bogus'])).not.toContain('Did you mean');
  });

  it('lets a command give --output its own values: a preview takes csv, a download a file', () => {
    const preview = parseCommandLine(['assets', 'preview', 'k', '--env', 'p', '-o', 'csv'], COMMANDS);
    expect(preview.kind === 'run' && preview.input.values['output']).toBe('csv');
    const download = parseCommandLine(['assets', 'download', 'k', '--env', 'p', '-o', 'out/k.parquet'], COMMANDS);
    expect(download.kind === 'run' && download.input.values['output']).toBe('out/k.parquet');
    const help = parseCommandLine(['assets', 'download', '--help'], COMMANDS);
    expect(help.kind === 'help' && help.text).toMatch(/-o, --output FILE +where to write it/);
  });

  it('never echoes an extra argument of secrets set: it is likely the value', () => {
    const message = usage(['secrets', 'set', 'API_KEY', '--env', 'prod', 's3cr3t-value']);
    expect(message).not.toContain('s3cr3t-value');
    expect(message).toContain('the value is read from stdin');
    expect(message).toContain('--from-file');
  });

  it('names the missing required options by their flags', () => {
    // --storage-prefix may be left out by a preview with --parent: the server says when it is missing.
    expect(usage(['env', 'create', 'x'])).toBe('envctl env create needs --executor local|remote; see envctl env create --help');
    expect(usage(['bindings', 'set', 'warehouse'])).toContain('needs --env NAME;');
    expect(usage(['secrets', 'list'])).toContain('envctl secrets list needs --env NAME');
  });

  it('has no command option that shadows a global one, and no command words that prefix another command', () => {
    for (const command of COMMANDS) {
      for (const name of Object.keys(command.options ?? {})) expect(GLOBAL_OPTIONS, `${command.path.join(' ')} --${name}`).not.toHaveProperty(name);
      const shorts = Object.values(command.options ?? {}).map((spec) => spec.short).filter(Boolean);
      for (const spec of Object.values(GLOBAL_OPTIONS)) if (spec.short) expect(shorts).not.toContain(spec.short);
      for (const other of COMMANDS) {
        if (other === command || other.path.length <= command.path.length) continue;
        expect(command.path.every((word, index) => other.path[index] === word), `${command.path.join(' ')} prefixes ${other.path.join(' ')}`).toBe(false);
      }
    }
  });

  it('offers no option that takes a secret value or a token on its own command line, except the documented --token', () => {
    const valueOptions = COMMANDS.flatMap((command) => Object.keys(command.options ?? {}).map((name) => `${command.path.join(' ')} --${name}`));
    expect(valueOptions.filter((option) => /secrets set --(value|secret)$|--password|login --token/.test(option))).toEqual([]);
  });
});
