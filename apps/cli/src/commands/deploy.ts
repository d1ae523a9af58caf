import { resolve } from 'node:path';
import { IngestOptions, PublicApi, type Deployment, type DeploymentPending, type Environment } from '@envengine/contracts';
import type { z } from 'zod';
import type { ApiClient } from '../api-client.ts';
import { flagOption, listOption, requiredOption, stringOption, type CommandSpec } from '../command-line.ts';
import type { CommandContext } from '../command-context.ts';
import { CliError, ExitCode, type ExitCode as ExitCodeValue } from '../exit-codes.ts';
import { formatBytes } from '../output.ts';
import { gitInfoOf } from '../project/git-info.ts';
import { MANIFEST_OPTION, readAndPackProject } from '../project/manifest-file.ts';
import { REPORT_HEADERS, reportCells, validationRows } from '../project/validation-report.ts';
import { deploymentsOf, recheckLine, shortSha, TIMEOUT_OPTION, timeoutMsOf, waitForIngest } from './deployments.ts';
import { ENV_OPTION, requestBody } from './request-body.ts';

/** `created_by` of every deployment envctl makes. */
export const CREATED_BY = 'envctl';

/** What `deploy --output json` prints. */
export interface DeployResult {
  outcome: 'ready' | 'failed' | 'unchanged' | 'pending';
  bundle_ref: string;
  uploaded: boolean;
  deployment: Deployment | DeploymentPending;
}

/** The manifest's own top-level fields an ingest accepts beside the ingest fields (IngestOptions). */
const INGEST_FIELDS = new Set(['manifest', 'bundle_ref', 'git', 'sdk_version', 'activate', 'allow_contract_changes', 'created_by']);
const MANIFEST_FIELDS_BESIDE = Object.keys(IngestOptions.shape).filter((key) => !INGEST_FIELDS.has(key));

export function ingestBody(input: {
  manifest: Record<string, unknown>;
  bundleRef: string;
  git: { branch: string; sha: string };
  sdkVersion: string;
  activate: boolean;
  allowContractChanges: string[];
}): z.input<typeof IngestOptions> {
  const beside = Object.fromEntries(MANIFEST_FIELDS_BESIDE.filter((key) => key in input.manifest).map((key) => [key, input.manifest[key]]));
  return {
    ...beside,
    manifest: input.manifest,
    bundle_ref: input.bundleRef,
    git: input.git,
    sdk_version: input.sdkVersion,
    activate: input.activate,
    allow_contract_changes: input.allowContractChanges,
    created_by: CREATED_BY,
  };
}

/**
 * The deployment this one would repeat: the active one (or, with --no-activate, the
 * newest) when it is ready and has the same bundle. The manifest is always packed in the
 * bundle, so the same bundle_ref means the same files and the same manifest.
 */
async function sameDeployment(api: ApiClient, environment: Environment, bundleRef: string, activate: boolean): Promise<Deployment | undefined> {
  if (activate) {
    if (!environment.active_deployment_id) return undefined;
    const { data } = await api.request(PublicApi.getDeployment, { params: { id: environment.active_deployment_id } });
    return data.status === 'ready' && data.bundle_ref === bundleRef ? data : undefined;
  }
  for await (const deployment of deploymentsOf(api, environment.name)) {
    return deployment.bundle_ref === bundleRef && deployment.status === 'ready' ? deployment : undefined;
  }
  return undefined;
}

function printOutcome(ctx: CommandContext, result: DeployResult, manifest: Record<string, unknown>, env: string): ExitCodeValue {
  const { deployment } = result;
  if (deployment.status === 'pending') {
    ctx.out.data(result, () => `Deployment ${deployment.id} is still being validated.`);
    ctx.out.error('still_running', `the server stopped waiting for deployment ${deployment.id}; wait with --wait, or see envctl deployments get ${deployment.id}`);
    return ExitCode.timedOut;
  }
  const rows = validationRows(deployment, manifest);
  ctx.out.data(result, () => {
    const git = `git ${deployment.git.branch} @ ${shortSha(deployment.git.sha)}`;
    const headline =
      result.outcome === 'unchanged'
        ? `Unchanged: ${deployment.id} ${deployment.active ? 'is active' : 'is ready'} on ${env} with bundle ${result.bundle_ref} (${git}); nothing deployed. Use --force to deploy again.`
        : deployment.status === 'ready'
          ? `Deployment ${ctx.out.paint(deployment.id, 'bold')} is ${ctx.out.status('ready')}${deployment.active ? ' and active' : ''} on ${env} (${git}).`
          : `Deployment ${ctx.out.paint(deployment.id, 'bold')} ${ctx.out.status('failed')} on ${env}: ${deployment.validation.errors.length} error${deployment.validation.errors.length === 1 ? '' : 's'}, ${deployment.validation.warnings.length} warning${deployment.validation.warnings.length === 1 ? '' : 's'}.`;
    const recheck = result.outcome === 'unchanged' ? undefined : recheckLine(deployment);
    const list = rows.length > 0 && result.outcome !== 'unchanged' ? `\n${ctx.out.table(REPORT_HEADERS, reportCells(rows))}` : '';
    return [headline, recheck, list].filter(Boolean).join('\n');
  });
  if (deployment.status === 'failed') {
    ctx.out.error('deployment_failed', `deployment ${deployment.id} failed validation; nothing was activated`);
    return ExitCode.failed;
  }
  return ExitCode.ok;
}

export const deployCommand: CommandSpec = {
  path: ['deploy'],
  summary: 'pack a project folder, upload its bundle if the server lacks it, and deploy its manifest',
  args: '[DIR]',
  positionals: { min: 0, max: 1 },
  options: {
    ...ENV_OPTION,
    ...MANIFEST_OPTION,
    'no-activate': { type: 'boolean', description: 'validate and keep the deployment without activating it' },
    'allow-contract-change': { type: 'string', multiple: true, value: 'KEY', description: 'accept a schema change of asset KEY in a strict environment' },
    force: { type: 'boolean', description: 'deploy even when the same bundle and manifest are already deployed' },
    wait: { type: 'boolean', description: 'if the server stops waiting for the ingest, wait for it here (exit 6 after --timeout)' },
    ...TIMEOUT_OPTION,
  },
  async run(ctx, { values, positionals }) {
    const env = requiredOption(values, 'env', 'deploy');
    const dir = resolve(positionals[0] ?? '.');
    const activate = !flagOption(values, 'no-activate');
    const { manifest, packed } = await readAndPackProject(dir, stringOption(values, 'manifest'), (line) => ctx.out.warn(line));
    ctx.out.info(`Packed ${packed.files.length} file${packed.files.length === 1 ? '' : 's'} of ${dir} (${formatBytes(packed.bytes.length)}): ${packed.bundleRef}`);

    const api = await ctx.api();
    const environment = (await api.request(PublicApi.getEnvironment, { params: { name: env } })).data;
    if (!flagOption(values, 'force')) {
      const same = await sameDeployment(api, environment, packed.bundleRef, activate);
      if (same) return printOutcome(ctx, { outcome: 'unchanged', bundle_ref: packed.bundleRef, uploaded: false, deployment: same }, manifest, env);
    }
    let uploaded = false;
    if ((await api.status(PublicApi.bundleExists, { params: { ref: packed.bundleRef } })) === 404) {
      const { data } = await api.request(PublicApi.uploadBundle, { body: packed.bytes }, { idempotent: true, timeoutMs: 300_000 });
      if (data.bundle_ref !== packed.bundleRef) throw new CliError(ExitCode.failed, 'bundle_mismatch', `the server stored the bundle as ${data.bundle_ref}, not ${packed.bundleRef}`);
      uploaded = true;
      ctx.out.info(`Uploaded the bundle.`);
    } else {
      ctx.out.info('The server already has this bundle; not uploading it.');
    }
    const git = await gitInfoOf(dir, ctx.env.inherited);
    const body = requestBody(
      IngestOptions,
      ingestBody({ manifest, bundleRef: packed.bundleRef, git, sdkVersion: ctx.version, activate, allowContractChanges: listOption(values, 'allow-contract-change') }),
    );
    ctx.out.info(`Deploying to ${env} (git ${git.branch} @ ${shortSha(git.sha)})…`);
    // 201 ready, 202 pending, 422 failed: each a deployment (PublicApi.createDeployment's answers).
    let deployment: Deployment | DeploymentPending = (await api.request(PublicApi.createDeployment, { params: { name: env }, body }, { idempotent: true })).data;
    if (deployment.status === 'pending' && flagOption(values, 'wait')) {
      ctx.out.info(`The ingest of ${deployment.id} is still running; waiting…`);
      deployment = await waitForIngest(ctx, api, deployment.id, activate, timeoutMsOf(values));
    }
    const outcome = deployment.status === 'pending' ? 'pending' : deployment.status;
    return printOutcome(ctx, { outcome, bundle_ref: packed.bundleRef, uploaded, deployment }, manifest, env);
  },
};
