import { detailsFromZodError, PublicApi } from '@envengine/contracts';
import type { z } from 'zod';
import { requiredOption, type CommandSpec, type OptionSpec } from '../command-line.ts';
import { CliError, ExitCode } from '../exit-codes.ts';

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
    },
  };
}
