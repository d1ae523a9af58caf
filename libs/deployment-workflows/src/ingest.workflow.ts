import { executeChild, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { ValidationItem } from '@envengine/contracts';
import { ManifestV1, validateManifest } from '@envengine/manifest-rules';
import { activateDeployment } from './activate.workflow.ts';
import {
  activateWorkflowId,
  type DeploymentActivities,
  type DeploymentMemo,
  type IngestInput,
  type IngestOutcome,
} from './definitions.ts';

const { loadIngestContext, recordDeployment } = proxyActivities<DeploymentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds' },
});

/** Keeps a hostile manifest's findings within a workflow history's payload limits. */
const MAX_ISSUES = 500;

function capped(items: ValidationItem[]): ValidationItem[] {
  if (items.length <= MAX_ISSUES) return items;
  return [
    ...items.slice(0, MAX_ISSUES),
    { code: items[MAX_ISSUES]!.code, path: 'manifest', message: `${items.length - MAX_ISSUES} more findings are not listed.` },
  ];
}

/**
 * `ingest-<deployment id>`: gathers what validation needs (bindings, bundle entries, the
 * active manifest) in an activity, validates with the pure manifest rules here, writes
 * the row once, and activates a ready deployment when asked to.
 */
export async function ingestDeployment(input: IngestInput): Promise<IngestOutcome> {
  const context = await loadIngestContext({
    tenantId: input.tenantId,
    environmentName: input.environmentName,
    bundleRef: input.bundleRef,
  });
  const active = ManifestV1.safeParse(context.activeManifest);
  const validation = validateManifest(input.manifest, {
    bindings: new Map(context.bindings.map((binding) => [binding.name, { mode: binding.mode }])),
    bundleEntries: context.bundleEntries === null ? null : new Set(context.bundleEntries),
    activeManifest: active.success ? active.data : null,
    strict: context.strict,
    allowContractChanges: input.allowContractChanges,
  });
  const errors = capped([...input.fieldErrors, ...validation.errors]);
  const status = errors.length === 0 ? 'ready' : 'failed';
  await recordDeployment({
    deploymentId: input.deploymentId,
    tenantId: input.tenantId,
    environmentId: input.environmentId,
    environmentName: input.environmentName,
    status,
    git: input.git,
    bundleRef: input.bundleRef,
    sdkVersion: input.sdkVersion,
    validation: { errors, warnings: capped(validation.warnings) },
    allowContractChanges: input.allowContractChanges,
    createdBy: input.createdBy,
    manifest: input.manifest,
  });
  if (status !== 'ready' || !input.activate) return { deploymentId: input.deploymentId, status, recheck: null };

  const memo: DeploymentMemo = {
    tenant_id: input.tenantId,
    environment: input.environmentName,
    environment_id: input.environmentId,
    deployment_id: input.deploymentId,
  };
  const recheck = await executeChild(activateDeployment, {
    workflowId: activateWorkflowId(input.deploymentId),
    taskQueue: workflowInfo().taskQueue,
    memo: { ...memo },
    args: [
      {
        deploymentId: input.deploymentId,
        tenantId: input.tenantId,
        environmentId: input.environmentId,
        environmentName: input.environmentName,
      },
    ],
  });
  return { deploymentId: input.deploymentId, status, recheck };
}
