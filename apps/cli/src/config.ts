import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * Everything envctl reads from its environment, parsed once at start (main.ts). Nothing
 * else in the CLI reads `process.env`.
 */
const CliEnvironmentSchema = z.object({
  ENVCTL_URL: z.string().min(1).optional(),
  ENVCTL_TOKEN: z.string().min(1).optional(),
  /** Path of the config file, instead of the default one. */
  ENVCTL_CONFIG: z.string().min(1).optional(),
  /** Redis of the engine, for `worker start`. */
  ENVCTL_REDIS_URL: z.string().min(1).optional(),
  /** The attempt-worker program `worker start` runs (default: the one built beside envctl). */
  ENVCTL_WORKER_BIN: z.string().min(1).optional(),
  XDG_CONFIG_HOME: z.string().min(1).optional(),
  HOME: z.string().min(1).optional(),
  /** Set (to anything but "" or "false") by CI systems: never prompt. */
  CI: z.string().optional(),
  /** https://no-color.org: any non-empty value turns colour off. */
  NO_COLOR: z.string().optional(),
  TERM: z.string().optional(),
});

export interface CliEnvironment {
  url: string | undefined;
  token: string | undefined;
  configFile: string;
  redisUrl: string | undefined;
  workerBin: string | undefined;
  ci: boolean;
  noColor: boolean;
  dumbTerminal: boolean;
  /** The environment a child process (the attempt-worker) inherits, without envctl's own token. */
  inherited: Record<string, string>;
}

export function defaultConfigFile(env: { XDG_CONFIG_HOME?: string; HOME?: string }): string {
  const base = env.XDG_CONFIG_HOME ?? join(env.HOME ?? homedir(), '.config');
  return join(base, 'envctl', 'config.json');
}

export function loadCliEnvironment(env: Record<string, string | undefined>): CliEnvironment {
  const parsed = CliEnvironmentSchema.parse(Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== '')));
  const inherited = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined && !entry[0].startsWith('ENVCTL_')),
  );
  return {
    url: parsed.ENVCTL_URL,
    token: parsed.ENVCTL_TOKEN,
    configFile: parsed.ENVCTL_CONFIG ?? defaultConfigFile(parsed),
    redisUrl: parsed.ENVCTL_REDIS_URL,
    workerBin: parsed.ENVCTL_WORKER_BIN,
    ci: parsed.CI !== undefined && parsed.CI !== 'false' && parsed.CI !== '0',
    noColor: parsed.NO_COLOR !== undefined,
    dumbTerminal: parsed.TERM === 'dumb',
    inherited,
  };
}
