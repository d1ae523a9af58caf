import { Environment } from '@envengine/contracts';
import { z } from 'zod';
import { ApiClient } from '../api-client.ts';
import type { CommandSpec } from '../command-line.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import { promptHidden, readStdin } from '../prompts.ts';
import { readConfigFile, writeConfigFile } from '../settings.ts';

export const authCommands: CommandSpec[] = [
  {
    path: ['login'],
    summary: 'check a token against the API and save it with the URL in the config file (mode 0600); the token is read from stdin, or asked for on a terminal',
    async run(ctx) {
      let token: string;
      if (ctx.io.stdin.isTTY) {
        if (!ctx.canPrompt) throw new CliError(ExitCode.auth, 'missing_token', 'CI is set: pipe the token on stdin (envctl login < token-file)');
        token = (await promptHidden(ctx.io, 'API token (not shown): ')).trim();
      } else {
        token = (await readStdin(ctx.io)).toString('utf8').trim();
      }
      if (token === '') throw new CliError(ExitCode.auth, 'missing_token', 'no token on stdin');
      const { url } = await ctx.settings();
      const api = new ApiClient({ baseUrl: url, token, userAgent: `envctl/${ctx.version}` });
      const { data } = await api.call('GET', '/environments', { data: z.array(Environment) });
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
