import { parseCommandLine, type CommandSpec } from './command-line.ts';
import { createContext, type ContextDeps } from './command-context.ts';
import { CliError, ExitCode } from './exit-codes.ts';
import { Output } from './output.ts';
import { assetCommands } from './commands/assets.ts';
import { authCommands } from './commands/auth.ts';
import { bindingCommands } from './commands/bindings.ts';
import { deployCommand } from './commands/deploy.ts';
import { deploymentCommands } from './commands/deployments.ts';
import { environmentCommands } from './commands/environments.ts';
import { packCommand } from './commands/pack.ts';
import { poolCommands } from './commands/pool.ts';
import { quotaCommands } from './commands/quotas.ts';
import { runCommands } from './commands/runs.ts';
import { scheduleCommands } from './commands/schedules.ts';
import { secretCommands } from './commands/secrets.ts';
import { workerCommand } from './commands/worker.ts';

/** Every command, in the order `envctl --help` lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  ...authCommands,
  ...environmentCommands,
  ...secretCommands,
  ...bindingCommands,
  deployCommand,
  packCommand,
  ...deploymentCommands,
  ...assetCommands,
  ...runCommands,
  ...scheduleCommands,
  ...poolCommands,
  ...quotaCommands,
  workerCommand,
];

/** Runs one command line and answers its exit code; never throws. */
export async function runCli(argv: readonly string[], deps: ContextDeps): Promise<number> {
  const fallbackOut = new Output(deps.io, { mode: undefined, noColor: deps.env.noColor || argv.includes('--no-color'), dumbTerminal: deps.env.dumbTerminal });
  try {
    const parsed = parseCommandLine(argv, COMMANDS);
    if (parsed.kind === 'help') {
      deps.io.stdout.write(`${parsed.text}\n`);
      return ExitCode.ok;
    }
    if (parsed.kind === 'version') {
      deps.io.stdout.write(`envctl ${deps.version}\n`);
      return ExitCode.ok;
    }
    const ctx = createContext(deps, parsed.input.values);
    return (await parsed.command.run(ctx, parsed.input)) ?? ExitCode.ok;
  } catch (error) {
    if (error instanceof CliError) {
      fallbackOut.error(error.code, error.message, error.details);
      return error.exitCode;
    }
    fallbackOut.error('internal', error instanceof Error ? error.message : String(error));
    return ExitCode.failed;
  }
}
