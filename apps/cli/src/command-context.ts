import { readFile } from 'node:fs/promises';
import { ApiClient } from './api-client.ts';
import type { OptionValues } from './command-line.ts';
import type { CliEnvironment } from './config.ts';
import { CliError, ExitCode } from './exit-codes.ts';
import { Output, type CliIo } from './output.ts';
import { missingTokenError, readConfigFile, resolveSettings, type Settings } from './settings.ts';

export interface CommandContext {
  io: CliIo;
  out: Output;
  env: CliEnvironment;
  version: string;
  /** The config file in use (ENVCTL_CONFIG or the default). */
  configFile: string;
  /** URL and token from flag, environment or config file, in that order. */
  settings(): Promise<Settings>;
  /** A client with the resolved URL and token (or the token given: `login` checks a new one); no token is exit 3. */
  api(token?: string): Promise<ApiClient>;
  /** True where envctl may ask a person: stdin is a terminal and CI is not set. */
  canPrompt: boolean;
  sleep(ms: number): Promise<void>;
  now(): number;
  /** Calls `handler` on Ctrl-C (SIGINT) instead of the default exit; returns the unhook. */
  onInterrupt(handler: () => void): () => void;
}

export interface ContextDeps {
  io: CliIo;
  env: CliEnvironment;
  version: string;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
  onInterrupt?: (handler: () => void) => () => void;
}

function onSigint(handler: () => void): () => void {
  process.once('SIGINT', handler);
  return () => process.off('SIGINT', handler);
}

export function createContext(deps: ContextDeps, values: OptionValues): CommandContext {
  const out = new Output(deps.io, {
    mode: values.output === 'table' || values.output === 'json' ? values.output : undefined,
    noColor: deps.env.noColor || values['no-color'] === true,
    dumbTerminal: deps.env.dumbTerminal,
  });
  const configFile = deps.env.configFile;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let settings: Promise<Settings> | undefined;
  const resolve = async (): Promise<Settings> => {
    const file = await readConfigFile(configFile, (line) => out.warn(line));
    let flagToken = typeof values.token === 'string' ? values.token : undefined;
    if (typeof values['token-file'] === 'string') {
      const path = values['token-file'];
      flagToken = (await readFile(path, 'utf8').catch((error: Error) => {
        throw new CliError(ExitCode.usage, 'usage', `cannot read --token-file ${path}: ${error.message}`);
      })).trim();
      if (flagToken === '') throw new CliError(ExitCode.auth, 'missing_token', `--token-file ${path} is empty`);
    }
    return resolveSettings({
      flags: { url: typeof values.url === 'string' ? values.url : undefined, token: flagToken },
      environment: { url: deps.env.url, token: deps.env.token },
      file,
    });
  };
  return {
    io: deps.io,
    out,
    env: deps.env,
    version: deps.version,
    configFile,
    settings: () => (settings ??= resolve()),
    api: async (token?: string) => {
      const resolved = await (settings ??= resolve());
      const used = token ?? resolved.token;
      if (!used) throw missingTokenError(configFile);
      return new ApiClient({ baseUrl: resolved.url, token: used, userAgent: `envctl/${deps.version}`, fetch: deps.fetch, sleep });
    },
    canPrompt: deps.io.stdin.isTTY === true && !deps.env.ci,
    sleep,
    now: deps.now ?? Date.now,
    onInterrupt: deps.onInterrupt ?? onSigint,
  };
}
