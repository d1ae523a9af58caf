import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { CliError, ExitCode } from './exit-codes.ts';

/** What `envctl login` writes (mode 0600). */
export const ConfigFile = z.object({
  url: z.string().min(1).optional(),
  token: z.string().min(1).optional(),
});
export type ConfigFile = z.infer<typeof ConfigFile>;

/** The engine of `npm start`, when nothing names another. */
export const DEFAULT_URL = 'http://127.0.0.1:8080';

export type SettingSource = 'flag' | 'environment' | 'config file' | 'default';

export interface Settings {
  url: string;
  urlSource: SettingSource;
  token: string | undefined;
  tokenSource: Exclude<SettingSource, 'default'> | undefined;
}

export interface SettingInputs {
  flags: { url?: string; token?: string };
  environment: { url?: string; token?: string };
  file: ConfigFile;
}

/** The gateway's base URL: no trailing `/` and no `/api/v1`, which every call adds. */
export function normalizeUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError(ExitCode.usage, 'usage', `"${raw}" is not a URL (expected e.g. ${DEFAULT_URL})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(ExitCode.usage, 'usage', `the API URL must be http or https, not ${url.protocol}`);
  return url.href.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
}

/** Each setting from the first place that has it: flag, then environment, then the config file. */
export function resolveSettings(inputs: SettingInputs): Settings {
  const pick = <K extends 'url' | 'token'>(key: K) => {
    if (inputs.flags[key] !== undefined) return { value: inputs.flags[key], source: 'flag' as const };
    if (inputs.environment[key] !== undefined) return { value: inputs.environment[key], source: 'environment' as const };
    if (inputs.file[key] !== undefined) return { value: inputs.file[key], source: 'config file' as const };
    return undefined;
  };
  const url = pick('url');
  const token = pick('token');
  return {
    url: normalizeUrl(url?.value ?? DEFAULT_URL),
    urlSource: url?.source ?? 'default',
    token: token?.value?.trim(),
    tokenSource: token?.source,
  };
}

export function missingTokenError(configFile: string): CliError {
  return new CliError(
    ExitCode.auth,
    'missing_token',
    `no API token: set ENVCTL_TOKEN, pass --token-file, or run "envctl login" (reads the token from stdin) to write ${configFile}`,
  );
}

/** Reads the config file; a missing file is an empty config. */
export async function readConfigFile(path: string, warn: (line: string) => void): Promise<ConfigFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(ExitCode.usage, 'config_unreadable', `cannot read ${path}: ${(error as Error).message}`);
  }
  const mode = (await stat(path)).mode & 0o777;
  if ((mode & 0o077) !== 0) warn(`${path} is readable by other users (mode ${mode.toString(8)}); run: chmod 600 ${path}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CliError(ExitCode.usage, 'config_invalid', `${path} is not JSON; fix it or run "envctl login" again`);
  }
  const parsed = ConfigFile.safeParse(json);
  if (!parsed.success) throw new CliError(ExitCode.usage, 'config_invalid', `${path}: ${parsed.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`).join('; ')}`);
  return parsed.data;
}

/** Writes the config file with mode 0600 (its folder 0700), replacing it whole. */
export async function writeConfigFile(path: string, config: ConfigFile): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const partial = `${path}.${process.pid}.tmp`;
  await writeFile(partial, `${JSON.stringify(ConfigFile.parse(config), null, 2)}\n`, { mode: 0o600 });
  await chmod(partial, 0o600);
  await rename(partial, path);
}
