import { CreateEnvironmentRequest, PatchEnvironmentRequest, PublicApi, ScheduleToggleRequest, SetPlacementRequest, type Environment } from '@envengine/contracts';
import { choiceOption, choiceValue, flagOption, stringOption, type CommandSpec, type OptionValues } from '../command-line.ts';
import type { CommandContext } from '../command-context.ts';
import { CliError, ExitCode, usageError } from '../exit-codes.ts';
import { promptLine } from '../prompts.ts';
import type { Output } from '../output.ts';
import { requestBody } from './request-body.ts';

export function environmentTable(out: Output, environments: readonly Environment[]): string {
  return out.table(
    ['NAME', 'EXECUTOR', 'KIND', 'STRICT', 'SCHEDULES', 'ACTIVE DEPLOYMENT', 'GIT REF'],
    environments.map((environment) => [
      environment.name,
      environment.executor,
      environment.kind,
      environment.strict ? 'yes' : 'no',
      environment.status === 'deleting' ? { text: 'deleting', color: 'red' } : environment.schedules_paused ? { text: 'paused', color: 'yellow' } : 'running',
      environment.active_deployment_id,
      environment.git_ref,
    ]),
  );
}

function environmentFields(out: Output, environment: Environment): string {
  return out.fields([
    ['name', environment.name],
    ['id', environment.id],
    ['kind', environment.kind],
    ['executor', environment.executor],
    ['strict', environment.strict],
    ['egress', environment.egress],
    ['storage prefix', environment.storage_prefix],
    ['schedules', environment.schedules_paused ? { text: `paused${environment.schedules_paused_reason ? ` (${environment.schedules_paused_reason})` : ''}`, color: 'yellow' } : 'running'],
    ['active deployment', environment.active_deployment_id],
    ['git ref', environment.git_ref],
    ['status', environment.status === 'deleting' ? { text: 'deleting', color: 'red' } : environment.status],
    ['max concurrent runs', environment.max_concurrent_runs ?? 'no limit'],
    ...(environment.kind === 'preview'
      ? ([['parent', environment.parent ?? '-'], ['ttl hours', environment.ttl_hours], ['idle ttl hours', environment.idle_ttl_hours], ['expires', environment.expires_at], ['on expiry', environment.purge_data_on_expiry ? 'files removed' : 'files kept']] as const)
      : []),
    ['created', environment.inserted_at],
  ]);
}

function printEnvironment(ctx: CommandContext, environment: Environment): void {
  ctx.out.data(environment, () => environmentFields(ctx.out, environment));
}

/** `--ttl-hours`, `--idle-ttl-hours` and `--max-concurrent-runs`: a number, or `none` (on `env set`) to remove it; the API checks the range. */
function lifecycleSettings(values: OptionValues, allowNone: boolean): { ttl_hours?: unknown; idle_ttl_hours?: unknown; max_concurrent_runs?: unknown } {
  const setting = (name: string): unknown => {
    const raw = stringOption(values, name);
    if (raw === undefined) return undefined;
    if (raw === 'none' && allowNone) return null;
    const value = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(value)) throw usageError(`--${name} must be a number${allowNone ? ' or "none"' : ''}, not "${raw}"`);
    return value;
  };
  const ttl = setting('ttl-hours');
  const idle = setting('idle-ttl-hours');
  const limit = setting('max-concurrent-runs');
  return { ...(ttl === undefined ? {} : { ttl_hours: ttl }), ...(idle === undefined ? {} : { idle_ttl_hours: idle }), ...(limit === undefined ? {} : { max_concurrent_runs: limit }) };
}

const EXECUTORS = ['local', 'remote'] as const;
const EGRESS = ['none', 'public'] as const;

function executorArgument(value: string): 'local' | 'remote' {
  return choiceValue('the executor', value, EXECUTORS);
}

export const environmentCommands: CommandSpec[] = [
  {
    path: ['env', 'list'],
    summary: 'list your environments',
    async run(ctx) {
      const { data } = await (await ctx.api()).request(PublicApi.listEnvironments, {});
      ctx.out.data(data, () => environmentTable(ctx.out, data));
    },
  },
  {
    path: ['env', 'get'],
    summary: 'show one environment',
    args: 'NAME',
    positionals: { min: 1, max: 1 },
    async run(ctx, { positionals }) {
      const { data } = await (await ctx.api()).request(PublicApi.getEnvironment, { params: { name: positionals[0]! } });
      printEnvironment(ctx, data);
    },
  },
  {
    path: ['env', 'create'],
    summary: 'create an environment',
    args: 'NAME',
    positionals: { min: 1, max: 1 },
    options: {
      'storage-prefix': { type: 'string', value: 'PREFIX', description: "(required unless --parent) where its materializations go: s3://BUCKET/PATH, or file://PATH under the storage root; a preview with --parent defaults to <parent's prefix>/previews/NAME" },
      parent: { type: 'string', value: 'ENV', description: "a preview's parent: it uses the parent's bindings and secrets where it sets none of its own" },
      executor: { type: 'string', value: 'local|remote', description: '(required) where its attempts run' },
      kind: { type: 'string', value: 'persistent|preview', description: 'default persistent' },
      strict: { type: 'boolean', description: 'accept a schema change only when the deploy lists it (--allow-contract-change)' },
      egress: { type: 'string', value: 'none|public', description: "what its assets may reach on the network: nothing (default), or public hosts (never the engine's host or private addresses)" },
      'ttl-hours': { type: 'string', value: 'HOURS', description: 'a preview lives this long after its creation and after each deploy, then is deleted' },
      'idle-ttl-hours': { type: 'string', value: 'HOURS', description: 'a preview with no deploy and no run for this long is deleted' },
      'max-concurrent-runs': { type: 'string', value: 'N', description: 'runs in flight at once; more wait in order (default: no limit)' },
      'keep-data-on-expiry': { type: 'boolean', description: "when the TTL tears a preview down, keep its materialization files (removed by default)" },
    },
    async run(ctx, { values, positionals }) {
      const body = requestBody(CreateEnvironmentRequest, {
        name: positionals[0],
        storage_prefix: stringOption(values, 'storage-prefix'),
        executor: choiceOption(values, 'executor', EXECUTORS),
        ...(stringOption(values, 'parent') ? { parent: stringOption(values, 'parent') } : {}),
        // A parent is a preview's: the kind follows unless given.
        ...(stringOption(values, 'kind') ? { kind: choiceOption(values, 'kind', ['persistent', 'preview']) } : stringOption(values, 'parent') ? { kind: 'preview' } : {}),
        strict: flagOption(values, 'strict'),
        ...(stringOption(values, 'egress') ? { egress: choiceOption(values, 'egress', EGRESS) } : {}),
        ...lifecycleSettings(values, false),
        ...(flagOption(values, 'keep-data-on-expiry') ? { purge_data_on_expiry: false } : {}),
      });
      const { data } = await (await ctx.api()).request(PublicApi.createEnvironment, { body }, { idempotent: true });
      ctx.out.info(`Created environment ${data.name} (${data.id}).`);
      printEnvironment(ctx, data);
    },
  },
  {
    path: ['env', 'set'],
    summary: "change an environment's settings (only those given)",
    args: 'NAME',
    positionals: { min: 1, max: 1 },
    options: {
      egress: { type: 'string', value: 'none|public', description: 'what its assets may reach on the network' },
      strict: { type: 'string', value: 'true|false', description: 'accept a schema change only when the deploy lists it' },
      'ttl-hours': { type: 'string', value: 'HOURS|none', description: "a preview's lifetime from now (and after each deploy); none removes it" },
      'idle-ttl-hours': { type: 'string', value: 'HOURS|none', description: "a preview's idle lifetime from now (and after each deploy or run); none removes it" },
      'max-concurrent-runs': { type: 'string', value: 'N|none', description: 'runs in flight at once; none removes the limit' },
    },
    async run(ctx, { values, positionals }) {
      const strict = choiceOption(values, 'strict', ['true', 'false']);
      const egress = choiceOption(values, 'egress', EGRESS);
      const lifecycle = lifecycleSettings(values, true);
      if (egress === undefined && strict === undefined && Object.keys(lifecycle).length === 0) {
        throw usageError('env set changes nothing without --egress, --strict, --ttl-hours or --max-concurrent-runs');
      }
      const body = requestBody(PatchEnvironmentRequest, {
        ...(egress === undefined ? {} : { egress }),
        ...(strict === undefined ? {} : { strict: strict === 'true' }),
        ...lifecycle,
      });
      const { data } = await (await ctx.api()).request(PublicApi.updateEnvironment, { params: { name: positionals[0]! }, body }, { idempotent: true });
      printEnvironment(ctx, data);
    },
  },
  {
    path: ['env', 'delete'],
    summary: 'delete an environment: its schedules, runs, bindings, secrets, deployments and records (its files stay unless --purge-data)',
    args: 'NAME',
    positionals: { min: 1, max: 1 },
    options: {
      yes: { type: 'boolean', description: 'do not ask; required where envctl cannot ask (CI, or stdin not a terminal)' },
      force: { type: 'boolean', description: 'cancel running attempts too (without it, running attempts refuse the delete)' },
      'purge-data': { type: 'boolean', description: 'also remove its materialization files' },
    },
    async run(ctx, { values, positionals }) {
      const name = positionals[0]!;
      if (!flagOption(values, 'yes')) {
        if (!ctx.canPrompt) throw usageError(`env delete asks before it deletes; where it cannot ask (CI, or stdin not a terminal), pass --yes`);
        const what = flagOption(values, 'purge-data') ? 'and its materialization files' : '(its materialization files are kept)';
        const answer = await promptLine(ctx.io, `Delete environment ${name}, with its schedules, runs, bindings, secrets and deployments ${what}? Type its name to confirm: `);
        if (answer !== name) throw new CliError(ExitCode.failed, 'not_confirmed', `the answer was not "${name}": nothing was deleted`);
      }
      const query = {
        ...(flagOption(values, 'force') ? { force: 'true' as const } : {}),
        ...(flagOption(values, 'purge-data') ? { purge_data: 'true' as const } : {}),
      };
      const { data } = await (await ctx.api()).request(PublicApi.deleteEnvironment, { params: { name }, query });
      ctx.out.data(data, () => `Deleted environment ${data.name}.`);
    },
  },
  {
    path: ['env', 'placement'],
    summary: 'set where the attempts of one environment run',
    args: 'NAME local|remote',
    positionals: { min: 2, max: 2 },
    async run(ctx, { positionals }) {
      const body = requestBody(SetPlacementRequest, { executor: executorArgument(positionals[1]!) });
      const { data } = await (await ctx.api()).request(PublicApi.setPlacement, { params: { name: positionals[0]! }, body }, { idempotent: true });
      printEnvironment(ctx, data);
    },
  },
  ...(['pause', 'resume'] as const).map(
    (action): CommandSpec => ({
      path: ['env', action],
      summary: action === 'pause' ? "pause an environment's schedules (manual runs still start)" : "resume an environment's schedules",
      args: 'NAME',
      positionals: { min: 1, max: 1 },
      options: action === 'pause' ? { reason: { type: 'string', value: 'TEXT', description: 'why, shown on the environment' } } : {},
      async run(ctx, { values, positionals }) {
        const reason = stringOption(values, 'reason');
        const body = requestBody(ScheduleToggleRequest, reason === undefined ? {} : { reason });
        const { data } = await (await ctx.api()).request(action === 'pause' ? PublicApi.pauseSchedules : PublicApi.resumeSchedules, { params: { name: positionals[0]! }, body }, { idempotent: true });
        printEnvironment(ctx, data);
      },
    }),
  ),
  {
    path: ['placement', 'set'],
    summary: 'set where the attempts of all your environments run',
    args: 'local|remote',
    positionals: { min: 1, max: 1 },
    async run(ctx, { positionals }) {
      const body = requestBody(SetPlacementRequest, { executor: executorArgument(positionals[0]!) });
      const { data } = await (await ctx.api()).request(PublicApi.setPlacementForAll, { body }, { idempotent: true });
      ctx.out.data(data, () => `Every environment now runs on ${data.executor}:\n${environmentTable(ctx.out, data.environments)}`);
    },
  },
];
