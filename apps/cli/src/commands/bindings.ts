import { readFile } from 'node:fs/promises';
import { PublicApi, PutBindingRequest, type Binding } from '@envengine/contracts';
import { flagOption, listOption, requiredOption, stringOption, type CommandSpec } from '../command-line.ts';
import { CliError, ExitCode, usageError } from '../exit-codes.ts';
import { deleteCommand, ENV_OPTION, requestBody } from './request-body.ts';

function keyValue(option: string, pair: string): [string, string] {
  const at = pair.indexOf('=');
  if (at <= 0) throw usageError(`--${option} takes KEY=VALUE, not "${pair}"`);
  return [pair.slice(0, at), pair.slice(at + 1)];
}

/** A `--set` value: JSON where it parses as a number, boolean, null, array or object; else the string. */
function settingValue(raw: string): unknown {
  try {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === 'string' ? raw : parsed;
  } catch {
    return raw;
  }
}

async function configObject(inline: string | undefined, file: string | undefined): Promise<Record<string, unknown>> {
  if (inline !== undefined && file !== undefined) throw usageError('give --config or --config-file, not both');
  const text = file !== undefined ? await readFile(file, 'utf8').catch((error: Error) => { throw usageError(`cannot read --config-file ${file}: ${error.message}`); }) : inline;
  if (text === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw usageError('the binding config must be a JSON object');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw usageError('the binding config must be a JSON object');
  return parsed as Record<string, unknown>;
}

export const bindingCommands: CommandSpec[] = [
  {
    path: ['bindings', 'list'],
    summary: "list an environment's bindings (secret names, never values)",
    options: { ...ENV_OPTION },
    async run(ctx, { values }) {
      const env = requiredOption(values, 'env', 'bindings list');
      const { data } = await (await ctx.api()).request(PublicApi.listBindings, { params: { name: env } });
      ctx.out.data(data, () =>
        ctx.out.table(
          ['NAME', 'MODE', 'CONFIG', 'SECRET REFS', 'DANGLING'],
          data.map((binding) => [
            binding.name,
            { text: binding.mode, color: binding.mode === 'read_only' ? 'yellow' : undefined },
            Object.keys(binding.config).join(',') || '-',
            Object.entries(binding.secret_refs).map(([setting, secret]) => `${setting}→${secret}`).join(',') || '-',
            binding.dangling_secret_refs.join(',') || '-',
          ]),
        ),
      );
    },
  },
  {
    path: ['bindings', 'set'],
    summary: 'create or replace a binding (a PUT: what is not given takes its default; --keep keeps it instead)',
    args: 'CONNECTION',
    positionals: { min: 1, max: 1 },
    options: {
      ...ENV_OPTION,
      config: { type: 'string', value: 'JSON', description: 'the connection settings as a JSON object' },
      'config-file': { type: 'string', value: 'FILE', description: 'the connection settings from a JSON file' },
      set: { type: 'string', multiple: true, value: 'KEY=VALUE', description: 'one setting (added to --config); JSON values are parsed' },
      'secret-ref': { type: 'string', multiple: true, value: 'SETTING=SECRET', description: "a setting whose value is the environment's secret SECRET" },
      mode: { type: 'string', value: 'live|read_only', description: 'default live; read_only makes ctx.emit fail for its assets' },
      keep: {
        type: 'boolean',
        description: "change only what is given: the binding's other settings, secret refs and mode are read and written back (a change made by someone else in between is overwritten)",
      },
    },
    async run(ctx, { values, positionals }) {
      const env = requiredOption(values, 'env', 'bindings set');
      const name = positionals[0]!;
      const api = await ctx.api();
      let kept: Binding | undefined;
      if (flagOption(values, 'keep')) {
        const { data: bindings } = await api.request(PublicApi.listBindings, { params: { name: env } });
        kept = bindings.find((binding) => binding.name === name);
        if (!kept) throw new CliError(ExitCode.notFound, 'not_found', `there is no binding ${name} in ${env} to keep; create it without --keep`);
      }
      const config = { ...kept?.config, ...(await configObject(stringOption(values, 'config'), stringOption(values, 'config-file'))) };
      for (const pair of listOption(values, 'set')) {
        const [key, value] = keyValue('set', pair);
        config[key] = settingValue(value);
      }
      const secretRefs = { ...kept?.secret_refs, ...Object.fromEntries(listOption(values, 'secret-ref').map((pair) => keyValue('secret-ref', pair))) };
      const mode = stringOption(values, 'mode') ?? kept?.mode;
      const body = requestBody(PutBindingRequest, { config, secret_refs: secretRefs, ...(mode ? { mode } : {}) });
      const { status, data } = await api.request(PublicApi.putBinding, { params: { name: env, connection: name }, body });
      ctx.out.info(`${status === 201 ? 'Created' : 'Replaced'} binding ${data.name} in ${env}.`);
      ctx.out.data(data, () => ctx.out.fields([['name', data.name], ['mode', data.mode], ['config', JSON.stringify(data.config)], ['secret refs', JSON.stringify(data.secret_refs)]]));
    },
  },
  deleteCommand('bindings', 'binding', 'delete a binding'),
];
