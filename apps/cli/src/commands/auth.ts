import { apiTokensIn, POOL_TOKEN_PREFIX, PublicApi } from '@envengine/contracts';
import type { CommandSpec } from '../command-line.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { promptHidden, readStdin } from '../prompts.ts';
import { readConfigFile, writeConfigFile } from '../settings.ts';

/**
 * The one API token in what was given. Nothing of the input is ever repeated in a message:
 * it may hold a token that is not quite one (cut short, a pool token) or another secret.
 */
function tokenOf(text: string): string {
  const tokens = apiTokensIn(text);
  if (tokens.length === 1) return tokens[0]!;
  if (tokens.length > 1) throw new CliError(ExitCode.auth, 'missing_token', `the input holds ${tokens.length} different API tokens; give one (nothing of the input is shown)`);
  if (text.trim() === '') throw new CliError(ExitCode.auth, 'missing_token', 'no token on stdin');
  const hint = text.includes(POOL_TOKEN_PREFIX) ? ' (a pool token, eew_…, opens only the worker API: log in with an API token)' : '';
  throw new CliError(ExitCode.auth, 'missing_token', `no API token (eek_ and 43 characters) in the input${hint}; nothing of the input is shown`);
}

export const authCommands: CommandSpec[] = [
  {
    path: ['login'],
    summary:
      'check a token against the API and save it with the URL in the config file (mode 0600); the token is read from stdin (any text holding one eek_ token, such as the admin command\'s output), or asked for on a terminal',
    async run(ctx) {
      let text: string;
      if (ctx.io.stdin.isTTY) {
        if (!ctx.canPrompt) throw new CliError(ExitCode.auth, 'missing_token', 'CI is set: pipe the token on stdin (envctl login < token-file)');
        text = await promptHidden(ctx.io, 'API token (not shown): ');
      } else {
        text = (await readStdin(ctx.io)).toString('utf8');
      }
      const token = tokenOf(text);
      const { url } = await ctx.settings();
      const { data } = await (await ctx.api(token)).request(PublicApi.listEnvironments, {});
      const existing = await readConfigFile(ctx.configFile, (line) => ctx.out.warn(line));
      await writeConfigFile(ctx.configFile, { ...existing, url, token });
      ctx.out.info(`Logged in to ${url} (${data.length} environment${data.length === 1 ? '' : 's'}); saved to ${ctx.configFile} (mode 0600).`);
    },
  },
  {
    path: ['logout'],
    summary: 'remove the token from the config file (the URL stays)',
    async run(ctx) {
      const existing = await readConfigFile(ctx.configFile, (line) => ctx.out.warn(line));
      await writeConfigFile(ctx.configFile, { ...(existing.url ? { url: existing.url } : {}) });
      ctx.out.info(`Removed the token from ${ctx.configFile}.`);
    },
  },
  {
    path: ['config', 'show'],
    summary: 'where the URL and the token come from (flag, environment, config file); never the token',
    async run(ctx) {
      const settings = await ctx.settings();
      const shown = { url: settings.url, url_source: settings.urlSource, token_source: settings.tokenSource ?? null, config_file: ctx.configFile };
      ctx.out.data(shown, () =>
        ctx.out.fields([
          ['url', `${settings.url} (${settings.urlSource})`],
          ['token', settings.tokenSource ? `set (${settings.tokenSource})` : { text: 'missing', color: 'red' }],
          ['config file', ctx.configFile],
        ]),
      );
    },
  },
];
