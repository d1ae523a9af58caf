import { ActivateRequest, PromoteRequest, PublicApi, type Deployment, type DeploymentDiff, type Environment } from '@envengine/contracts';
import type { ApiClient } from '../api-client.ts';
import { flagOption, integerOption, listOption, requiredOption, stringOption, type CommandSpec, type OptionSpec, type OptionValues } from '../command-line.ts';
import type { CommandContext } from '../command-context.ts';
import { CliError, ExitCode } from '../exit-codes.ts';
import type { Output } from '../output.ts';
import { ENV_OPTION, requestBody } from './request-body.ts';

export const TIMEOUT_OPTION: Record<string, OptionSpec> = {
  timeout: { type: 'string', value: 'SECONDS', description: 'how long to wait (default 600); exit 6 if still going' },
};

export function timeoutMsOf(values: OptionValues, defaultSeconds = 600): number {
  return (integerOption(values, 'timeout', { min: 1, max: 86_400 }) ?? defaultSeconds) * 1000;
}

export const shortSha = (sha: string) => (/^[0-9a-f]{40}/.test(sha) ? `${sha.slice(0, 12)}${sha.slice(40)}` : sha);

export function recheckLine(deployment: Deployment): string | undefined {
  if (!deployment.recheck) return undefined;
  const { checked, quarantined } = deployment.recheck;
  return `Re-check: ${checked} asset${checked === 1 ? '' : 's'} checked, ${quarantined.length === 0 ? 'none quarantined' : `quarantined: ${quarantined.join(', ')}`}.`;
}

export function deploymentFields(out: Output, deployment: Deployment): string {
  return out.fields([
    ['id', deployment.id],
    ['status', { text: deployment.status, color: deployment.status === 'ready' ? 'green' : 'red' }],
    ['active', deployment.active],
    ['bundle', deployment.bundle_ref],
    ['git', `${deployment.git.branch} @ ${shortSha(deployment.git.sha)}`],
    ['sdk version', deployment.sdk_version],
    ['created by', deployment.created_by],
    ['allowed changes', deployment.allow_contract_changes.join(', ') || '-'],
    ['errors', deployment.validation.errors.length],
    ['warnings', deployment.validation.warnings.length],
    ['created', deployment.inserted_at],
  ]);
}

export function deploymentTable(out: Output, deployments: readonly Deployment[]): string {
  return out.table(
    ['ID', 'STATUS', 'ACTIVE', 'GIT', 'BUNDLE', 'CREATED BY', 'CREATED'],
    deployments.map((deployment) => [
      deployment.id,
      { text: deployment.status, color: deployment.status === 'ready' ? 'green' : 'red' },
      deployment.active ? { text: 'active', color: 'green' } : '',
      `${deployment.git.branch}@${shortSha(deployment.git.sha)}`,
      deployment.bundle_ref.slice(0, 19),
      deployment.created_by,
      deployment.inserted_at,
    ]),
  );
}

/** Every deployment of an environment, newest first, a page at a time. */
export async function* deploymentsOf(api: ApiClient, environment: string): AsyncGenerator<Deployment> {
  let cursor: string | undefined;
  for (;;) {
    const { data } = await api.request(PublicApi.listDeployments, { params: { name: environment }, query: { limit: 200, cursor } });
    yield* data;
    if (data.length < 200) return;
    cursor = data[data.length - 1]!.id;
  }
}

/** Polls a deployment whose ingest outlived the request until it is recorded (and active, if asked). */
export async function waitForIngest(ctx: CommandContext, api: ApiClient, id: string, activate: boolean, timeoutMs: number): Promise<Deployment> {
  const deadline = ctx.now() + timeoutMs;
  for (;;) {
    const row = await api.request(PublicApi.getDeployment, { params: { id } }).then(
      (answer) => (answer.data.status === 'pending' ? undefined : answer.data),
      (error: unknown) => {
        if (error instanceof CliError && error.exitCode === ExitCode.notFound) return undefined;
        throw error;
      },
    );
    if (row && (row.status === 'failed' || !activate || row.active)) return row;
    if (ctx.now() >= deadline) {
      throw new CliError(ExitCode.timedOut, 'timed_out', `deployment ${id} was still ${row ? 'activating' : 'being validated'} after ${timeoutMs / 1000} s; see envctl deployments get ${id}`);
    }
    await ctx.sleep(1000);
  }
}

/**
 * Activates a ready deployment and answers it with its re-check report. An activation
 * still running when the server stops waiting answers 503; asking again waits for the
 * same workflow, until `timeoutMs` (then exit 6).
 */
export async function activateAndWait(ctx: CommandContext, api: ApiClient, id: string, timeoutMs: number): Promise<Deployment> {
  const deadline = ctx.now() + timeoutMs;
  for (;;) {
    try {
      const { data } = await api.request(PublicApi.activateDeployment, { params: { id }, body: requestBody(ActivateRequest, {}) }, { idempotent: true });
      return data;
    } catch (error) {
      if (!(error instanceof CliError) || error.code !== 'unavailable' || ctx.now() >= deadline) {
        if (error instanceof CliError && error.code === 'unavailable') throw new CliError(ExitCode.timedOut, 'timed_out', `the activation of ${id} was still running after ${timeoutMs / 1000} s; run the command again to wait for it`);
        throw error;
      }
      ctx.out.info(`The activation of ${id} is still running; waiting…`);
    }
  }
}

function printActivation(ctx: CommandContext, deployment: Deployment, environment: string, previous: string | null): void {
  ctx.out.data(deployment, () =>
    [
      previous && previous !== deployment.id ? `Rolled back ${environment}: ${previous} → ${deployment.id} (git ${deployment.git.branch} @ ${shortSha(deployment.git.sha)}).` : `Activated ${deployment.id} on ${environment}.`,
      recheckLine(deployment) ?? '',
    ].filter(Boolean).join('\n'),
  );
}

/** A diff as lines: each asset, job and schedule that changed with what changed, then the files. */
export function diffLines(diff: DeploymentDiff): string[] {
  const sign = (change: string) => (change === 'added' ? '+' : change === 'removed' ? '-' : '~');
  const fromTo = (field: string, value: { from: unknown; to: unknown } | undefined) => (value ? [`    ${field}: ${JSON.stringify(value.from)} → ${JSON.stringify(value.to)}`] : []);
  const listed = (field: string, value: { added: string[]; removed: string[] } | undefined) =>
    value ? [`    ${field}: ${[...value.added.map((item) => `+${item}`), ...value.removed.map((item) => `-${item}`)].join(' ')}`] : [];
  const lines = [`Diff of ${diff.head_id} against ${diff.base_id ?? 'nothing (no earlier deployment)'}:`];
  for (const asset of diff.assets) {
    lines.push(`${sign(asset.change)} asset ${asset.key}`);
    for (const column of asset.columns_added) lines.push(`    + column ${column.name} ${column.type}${column.nullable ? ' (nullable)' : ''}`);
    for (const column of asset.columns_removed) lines.push(`    - column ${column.name} ${column.type}`);
    for (const column of asset.columns_changed) lines.push(`    ~ column ${column.name} ${column.from} → ${column.to}${column.nullable ? ` (nullable ${column.nullable.from} → ${column.nullable.to})` : ''}`);
    if (asset.change === 'changed') lines.push(...fromTo('entry', asset.entry), ...listed('deps', asset.deps), ...fromTo('binding', asset.binding), ...fromTo('timeout_seconds', asset.timeout_seconds));
  }
  for (const job of diff.jobs) lines.push(`${sign(job.change)} job ${job.name}`, ...(job.change === 'changed' ? listed('assets', job.assets) : []));
  for (const schedule of diff.schedules) lines.push(`${sign(schedule.change)} schedule ${schedule.name}`, ...(schedule.change === 'changed' ? [...fromTo('job', schedule.job), ...fromTo('cron', schedule.cron), ...fromTo('timezone', schedule.timezone)] : []));
  const { added, removed, changed } = diff.files;
  lines.push(...added.map((path) => `+ file ${path}`), ...removed.map((path) => `- file ${path}`), ...changed.map((path) => `~ file ${path}`));
  if (lines.length === 1) lines.push('No changes.');
  return lines;
}

async function environmentOf(api: ApiClient, name: string): Promise<Environment> {
  return (await api.request(PublicApi.getEnvironment, { params: { name } })).data;
}

export const deploymentCommands: CommandSpec[] = [
  {
    path: ['deployments', 'list'],
    summary: "list an environment's deployments, newest first",
    options: { ...ENV_OPTION, limit: { type: 'string', value: 'N', description: 'at most N (1-200, default 20)' }, active: { type: 'boolean', description: 'only the active one' } },
    async run(ctx, { values }) {
      const env = requiredOption(values, 'env', 'deployments list');
      const limit = integerOption(values, 'limit', { min: 1, max: 200 }) ?? 20;
      const query = values.active === true ? { active: 'true' as const } : { limit };
      const { data } = await (await ctx.api()).request(PublicApi.listDeployments, { params: { name: env }, query });
      ctx.out.data(data, () => deploymentTable(ctx.out, data));
    },
  },
  {
    path: ['deployments', 'get'],
    summary: 'show one deployment with its validation errors and warnings',
    args: 'ID',
    positionals: { min: 1, max: 1 },
    async run(ctx, { positionals }) {
      const { data } = await (await ctx.api()).request(PublicApi.getDeployment, { params: { id: positionals[0]! } });
      ctx.out.data(data, () => {
        // An ingest still running has no row yet beyond its id.
        if (data.status === 'pending') return `Deployment ${data.id} is still being validated.`;
        const items = [...data.validation.errors.map((item) => ['error', item] as const), ...data.validation.warnings.map((item) => ['warning', item] as const)];
        const list = items.length === 0 ? '' : `\n\n${ctx.out.table(['LEVEL', 'PATH', 'CODE', 'MESSAGE'], items.map(([level, item]) => [{ text: level, color: level === 'error' ? 'red' : 'yellow' }, item.path, item.code, item.message]))}`;
        return `${deploymentFields(ctx.out, data)}${list}`;
      });
    },
  },
  {
    path: ['deployments', 'activate'],
    summary: 'point its environment at a ready deployment (re-checks stored columns)',
    args: 'ID',
    positionals: { min: 1, max: 1 },
    options: { ...TIMEOUT_OPTION },
    async run(ctx, { values, positionals }) {
      const api = await ctx.api();
      const data = await activateAndWait(ctx, api, positionals[0]!, timeoutMsOf(values, 120));
      printActivation(ctx, data, data.environment_id, null);
    },
  },
  {
    path: ['deployments', 'promote'],
    summary: 'deploy the same manifest, bundle and git of a ready deployment to another environment',
    args: 'ID',
    positionals: { min: 1, max: 1 },
    options: {
      to: { type: 'string', value: 'ENV', description: 'the environment to promote to (required)' },
      'allow-contract-change': { type: 'string', multiple: true, value: 'KEY', description: 'accept a schema change of asset KEY in a strict target' },
      'no-activate': { type: 'boolean', description: 'keep the new deployment without activating it' },
      ...TIMEOUT_OPTION,
    },
    async run(ctx, { values, positionals }) {
      const id = positionals[0]!;
      const to = requiredOption(values, 'to', 'deployments promote');
      const activate = !flagOption(values, 'no-activate');
      const api = await ctx.api();
      const body = requestBody(PromoteRequest, { environment: to, activate, allow_contract_changes: listOption(values, 'allow-contract-change') });
      let answer = (await api.request(PublicApi.promoteDeployment, { params: { id }, body }, { idempotent: true })).data;
      if (answer.status === 'pending') {
        ctx.out.info(`The ingest of ${answer.id} is still running; waiting…`);
        answer = await waitForIngest(ctx, api, answer.id, activate, timeoutMsOf(values, 120));
      }
      const deployment = answer;
      ctx.out.data(deployment, () =>
        [
          deployment.status === 'ready'
            ? `Promoted ${id} to ${to}: ${ctx.out.paint(deployment.id, 'bold')} is ${ctx.out.status('ready')}${deployment.active ? ' and active' : ''} (git ${deployment.git.branch} @ ${shortSha(deployment.git.sha)}).`
            : `Promoting ${id} to ${to} ${ctx.out.status('failed')}: ${deployment.id} has ${deployment.validation.errors.length} error${deployment.validation.errors.length === 1 ? '' : 's'}.`,
          recheckLine(deployment) ?? '',
          deployment.validation.errors.length === 0 ? '' : ctx.out.table(['PATH', 'CODE', 'MESSAGE'], deployment.validation.errors.map((item) => [item.path, item.code, item.message])),
        ].filter(Boolean).join('\n'),
      );
      if (deployment.status === 'failed') {
        ctx.out.error('deployment_failed', `the promotion ${deployment.id} failed ${to}'s validation; nothing was activated`);
        return ExitCode.failed;
      }
      return ExitCode.ok;
    },
  },
  {
    path: ['deployments', 'diff'],
    summary: 'what changed between two deployments: assets and columns, jobs, schedules, files',
    args: 'ID',
    positionals: { min: 1, max: 1 },
    options: { base: { type: 'string', value: 'ID', description: 'compare against ID (default: the deployment active before it, else the active one)' } },
    async run(ctx, { values, positionals }) {
      const base = stringOption(values, 'base');
      const { data } = await (await ctx.api()).request(PublicApi.diffDeployment, { params: { id: positionals[0]! }, query: base === undefined ? {} : { base } });
      ctx.out.data(data, () => diffLines(data).join('\n'));
    },
  },
  {
    path: ['rollback'],
    summary: 'activate the previous ready deployment (or --to ID) and print the re-check report',
    options: { ...ENV_OPTION, to: { type: 'string', value: 'ID', description: 'the deployment to go back to (default: the newest ready one older than the active one)' }, ...TIMEOUT_OPTION },
    async run(ctx, { values }) {
      const env = requiredOption(values, 'env', 'rollback');
      const api = await ctx.api();
      const environment = await environmentOf(api, env);
      const activeId = environment.active_deployment_id;
      let targetId = stringOption(values, 'to');
      if (targetId === undefined) {
        if (activeId === null) throw new CliError(ExitCode.failed, 'nothing_to_roll_back', `${env} has no active deployment`);
        let seenActive = false;
        for await (const deployment of deploymentsOf(api, env)) {
          if (deployment.id === activeId) seenActive = true;
          else if (seenActive && deployment.status === 'ready') {
            targetId = deployment.id;
            break;
          }
        }
        if (targetId === undefined) throw new CliError(ExitCode.failed, 'nothing_to_roll_back', `${env} has no ready deployment older than the active one (${activeId})`);
      } else {
        const target = (await api.request(PublicApi.getDeployment, { params: { id: targetId } })).data;
        if (target.environment_id !== environment.id) throw new CliError(ExitCode.notFound, 'not_found', `deployment ${targetId} is not a deployment of ${env}`);
      }
      ctx.out.info(`Rolling ${env} back to ${targetId}…`);
      const data = await activateAndWait(ctx, api, targetId, timeoutMsOf(values, 120));
      printActivation(ctx, data, env, activeId);
    },
  },
];
