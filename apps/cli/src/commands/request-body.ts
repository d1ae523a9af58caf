import { detailsFromZodError, PublicApi } from '@envengine/contracts';
import type { z } from 'zod';
import { requiredOption, type CommandSpec, type OptionSpec } from '../command-line.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import type { ApiClient } from '../api-client.ts';
import type { CommandContext } from '../command-context.ts';

/**
 * A request body checked against its contract before it is sent: what the server would
 * refuse with 422 is a usage error here, with the same details.
 */
export function requestBody<T extends z.ZodType>(schema: T, value: unknown): z.input<T> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new CliError(ExitCode.usage, 'invalid_request', 'the request is not valid', detailsFromZodError(parsed.error).map((detail) => `${detail.path}: ${detail.message}`));
  }
  return value as z.input<T>;
}

export const ENV_OPTION: Record<string, OptionSpec> = {
  env: { type: 'string', short: 'e', value: 'NAME', description: '(required) the environment' },
};

/**
 * The API deletes a secret that bindings still name (the interface says the delete
 * succeeds); their runs would then fail at `ctx.connection`, so say which ones, and how to
 * mend them. A listing that fails (a token without `bindings:read`) says nothing.
 */
async function warnOfBindingsUsing(ctx: CommandContext, api: ApiClient, env: string, secret: string): Promise<void> {
  const bindings = await api.request(PublicApi.listBindings, { params: { name: env } }).then(({ data }) => data, () => []);
  const users = bindings.filter((binding) => Object.values(binding.secret_refs).includes(secret)).map((binding) => binding.name);
  if (users.length === 0) return;
  const named = users.length === 1 ? `binding ${users[0]} uses` : `bindings ${users.join(', ')} use`;
  ctx.out.warn(
    `${named} secret ${secret}, which is gone: assets fail at ctx.connection until you set it again (envctl secrets set ${secret} --env ${env}) or change the reference (envctl bindings set ${users.length === 1 ? users[0] : 'NAME'} --env ${env} --keep --secret-ref SETTING=SECRET)`,
  );
}

/** `<collection> delete NAME --env E`: `deleteSecret` or `deleteBinding`. */
export function deleteCommand(collection: 'secrets' | 'bindings', noun: string, summary: string): CommandSpec {
  return {
    path: [collection, 'delete'],
    summary,
    args: collection === 'bindings' ? 'CONNECTION' : 'NAME',
    positionals: { min: 1, max: 1 },
    options: { ...ENV_OPTION },
    async run(ctx, { values, positionals }) {
      const env = requiredOption(values, 'env', `${collection} delete`);
      const api = await ctx.api();
      const { data } =
        collection === 'secrets'
          ? await api.request(PublicApi.deleteSecret, { params: { name: env, secret: positionals[0]! } })
          : await api.request(PublicApi.deleteBinding, { params: { name: env, connection: positionals[0]! } });
      ctx.out.data(data, () => `Deleted ${noun} ${data.name} from ${env}.`);
      if (collection === 'secrets') await warnOfBindingsUsing(ctx, api, env, data.name);
    },
  };
}
