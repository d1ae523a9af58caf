import { PublicApi } from '@envengine/contracts';
import { didYouMean } from '@envengine/name-suggestions';
import { parseCommandLine, type CommandSpec, type OptionValues } from './command-line.ts';
import { createContext, type CommandContext, type ContextDeps } from './command-context.ts';
import { CliError, ExitCode } from './exit-codes.ts';
import { Output } from './output.ts';
import { assetCommands } from './commands/assets.ts';
import { authCommands } from './commands/auth.ts';
import { bindingCommands } from './commands/bindings.ts';
import { deployCommand } from './commands/deploy.ts';
import { deploymentCommands } from './commands/deployments.ts';
import { environmentCommands } from './commands/environments.ts';
import { eventCommands } from './commands/events.ts';
import { webhookCommands } from './commands/webhooks.ts';
import { packCommand } from './commands/pack.ts';
import { poolCommands } from './commands/pool.ts';
import { quotaCommands } from './commands/quotas.ts';
import { runCommands } from './commands/runs.ts';
import { scheduleCommands } from './commands/schedules.ts';
import { secretCommands } from './commands/secrets.ts';
import { tokenCommands } from './commands/tokens.ts';
import { validateCommand } from './commands/validate.ts';
import { workerCommand } from './commands/worker.ts';

/** Every command, in the order `envctl --help` lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  ...authCommands,
  ...environmentCommands,
  ...secretCommands,
  ...bindingCommands,
  deployCommand,
  validateCommand,
  packCommand,
  ...deploymentCommands,
  ...assetCommands,
  ...runCommands,
  ...scheduleCommands,
  ...poolCommands,
  ...quotaCommands,
  ...eventCommands,
  ...webhookCommands,
  ...tokenCommands,
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
    try {
      return (await parsed.command.run(ctx, parsed.input)) ?? ExitCode.ok;
    } catch (error) {
      throw error instanceof CliError && error.code === 'not_found' ? await withEnvironmentHint(ctx, parsed.input.values, error) : error;
    }
  } catch (error) {
    if (error instanceof CliError) {
      fallbackOut.error(error.code, error.message, error.details);
      return error.exitCode;
    }
    fallbackOut.error('internal', error instanceof Error ? error.message : String(error));
    return ExitCode.failed;
  }
}

/**
 * A 404 on a command given `--env NAME` that names no environment of the caller: the closest
 * name it has, when one is close (one more call, made only then; its own failure is ignored).
 */
async function withEnvironmentHint(ctx: CommandContext, values: OptionValues, error: CliError): Promise<CliError> {
  const env = values['env'];
  if (typeof env !== 'string' || !error.message.includes(`"${env}"`)) return error;
  try {
    const { data } = await (await ctx.api()).request(PublicApi.listEnvironments, {});
    const names = data.map((environment) => environment.name);
    if (names.includes(env)) return error;
    const hint = didYouMean(env, names);
    return hint === '' ? error : new CliError(error.exitCode, error.code, `${error.message}${hint.replace(/^ Did you mean "([^"]+)"\?$/, ' Did you mean --env $1?')}`, error.details);
  } catch {
    return error;
  }
}
