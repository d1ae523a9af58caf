import { readFile } from 'node:fs/promises';
import { PublicApi, PutSecretRequest } from '@envengine/contracts';
import { flagOption, requiredOption, stringOption, type CommandSpec } from '../command-line.ts';
import type { CommandContext } from '../command-context.ts';
import { CliError, usageError } from '../exit-codes.ts';
import { decodeSecretText, promptHidden, readStdin } from '../prompts.ts';
import { deleteCommand, ENV_OPTION, requestBody } from './request-body.ts';

/**
 * The value comes from a file or stdin (or a hidden prompt on a terminal), never from an
 * argument: arguments are visible to every user of the machine in the process list.
 */
async function secretValue(ctx: CommandContext, fromFile: string | undefined, keepNewline: boolean, name: string): Promise<string> {
  let bytes: Buffer;
  if (fromFile !== undefined) {
    bytes = await readFile(fromFile).catch((error: Error) => {
      throw usageError(`cannot read --from-file ${fromFile}: ${error.message}`);
    });
  } else if (ctx.io.stdin.isTTY) {
    if (!ctx.canPrompt) throw usageError('CI is set and stdin is a terminal: pipe the value on stdin or use --from-file');
    bytes = Buffer.from(await promptHidden(ctx.io, `Value of secret ${name} (not shown): `));
  } else {
    bytes = await readStdin(ctx.io);
  }
  const value = decodeSecretText(bytes, keepNewline);
  if (value === undefined) throw usageError('the secret value is not UTF-8 text');
  if (value.length === 0) throw usageError('the secret value is empty (nothing on stdin?)');
  return value;
}

export const secretCommands: CommandSpec[] = [
  {
    path: ['secrets', 'list'],
    summary: "list an environment's secrets (names and versions, never values)",
    options: { ...ENV_OPTION },
    async run(ctx, { values }) {
      const env = requiredOption(values, 'env', 'secrets list');
      const { data } = await (await ctx.api()).request(PublicApi.listSecrets, { params: { name: env } });
      ctx.out.data(data, () => ctx.out.table(['NAME', 'BACKEND', 'VERSION', 'ROTATED'], data.map((row) => [row.name, row.backend, row.version, row.rotated_at])));
    },
  },
  {
    path: ['secrets', 'set'],
    summary: 'create or rotate a secret; the value is read from stdin or --from-file, never from an argument',
    args: 'NAME',
    positionals: { min: 1, max: 1 },
    extraArgumentRefusal: 'the value is read from stdin (e.g. printf %s "$VALUE" | envctl secrets set NAME --env E) or --from-file FILE, never from an argument, which every user of the machine sees in the process list',
    options: {
      ...ENV_OPTION,
      'from-file': { type: 'string', value: 'FILE', description: 'read the value from FILE instead of stdin' },
      'keep-newline': { type: 'boolean', description: 'keep a trailing newline (removed by default)' },
    },
    async run(ctx, { values, positionals }) {
      const env = requiredOption(values, 'env', 'secrets set');
      const name = positionals[0]!;
      const value = await secretValue(ctx, stringOption(values, 'from-file'), flagOption(values, 'keep-newline'), name);
      const body = requestBody(PutSecretRequest, { value });
      const { status, data } = await (await ctx.api()).request(PublicApi.putSecret, { params: { name: env, secret: name }, body }).catch((error: unknown) => {
        // The API never echoes a value; keep it that way for anything this prints.
        if (error instanceof CliError) throw new CliError(error.exitCode, error.code, error.message.split(value).join('***'), error.details.map((line) => line.split(value).join('***')));
        throw error;
      });
      ctx.out.info(`${status === 201 ? 'Created' : 'Rotated'} secret ${data.name} in ${env}: version ${data.version}.`);
      ctx.out.data(data, () => ctx.out.table(['NAME', 'BACKEND', 'VERSION', 'ROTATED'], [[data.name, data.backend, data.version, data.rotated_at]]));
    },
  },
  deleteCommand('secrets', 'secret', 'delete a secret (every version is destroyed)'),
];
