import type { IngestMetrics } from '@envengine/service-metrics';
import {
  detailsFromZodError,
  EnvironmentAccess,
  IngestGate,
  IngestOptions,
  type Deployment,
  type DeploymentPending,
  type Environment,
  type PromoteRequest,
  type Recheck,
  type ValidationItem,
  WorkflowCause,
} from '@envengine/contracts';
import type { IngestInput } from '@envengine/deployment-workflows';
import { newId } from '@envengine/resource-ids';
import type { PlacementClient } from '@envengine/service-clients';
import { ApiError, environmentDeleting, notFound } from '@envengine/service-kit';
import type { DeploymentDocument, DeploymentRepository } from '@envengine/deployment-data';
import { StillRunningError, type WorkflowStarter } from './workflow-starter.ts';

export function toDeployment(doc: DeploymentDocument, activeId: string | null, recheck?: Recheck): Deployment {
  return {
    id: doc._id,
    environment_id: doc.environment_id,
    status: doc.status,
    active: doc._id === activeId,
    git: { branch: doc.git.branch, sha: doc.git.sha },
    bundle_ref: doc.bundle_ref,
    sdk_version: doc.sdk_version,
    validation: doc.validation,
    allow_contract_changes: doc.allow_contract_changes,
    created_by: doc.created_by,
    promoted_from: doc.promoted_from ?? null,
    inserted_at: doc.inserted_at.toISOString(),
    ...(recheck ? { recheck } : {}),
  };
}

/** Who asked, as the route's handler is told it. */
export interface RequestCause {
  actor: string;
  requestId: string;
}

/**
 * The cause a workflow carries to the events of its changes. An actor that is not one an
 * event can name (never from the gateway) is left out: its events then name `engine`,
 * rather than the deploy failing on it.
 */
export function workflowCauseOf(cause: RequestCause): { cause?: WorkflowCause } {
  const parsed = WorkflowCause.safeParse({ actor: cause.actor, request_id: cause.requestId });
  return parsed.success ? { cause: parsed.data } : {};
}

/** Ingest, activation and reads of deployments; validation and activation run as workflows. */
export class DeploymentsService {
  constructor(
    private readonly deployments: DeploymentRepository,
    private readonly placement: PlacementClient,
    private readonly workflows: WorkflowStarter,
    private readonly metrics: IngestMetrics,
  ) {}

  private async environment(tenantId: string, name: string, requestId: string): Promise<Environment> {
    const environment = await this.placement.findEnvironment(tenantId, name, requestId);
    if (!environment) throw notFound(`Environment "${name}"`);
    return environment;
  }

  /**
   * When an ingest or an activation failed (or an ingest left no row): 409
   * `environment_deleting` if the environment's tear-down began meanwhile (it removes what
   * the ingest stored, and refuses the pointer's move), rather than an internal error;
   * undefined otherwise.
   */
  private async deletedMeanwhile(tenantId: string, environment: Environment, requestId?: string): Promise<ApiError | undefined> {
    const now = await this.placement.findEnvironment(tenantId, environment.name, requestId);
    if (now?.id === environment.id && now.status !== 'deleting') return undefined;
    return new ApiError('environment_deleting', `Environment "${environment.name}" was deleted while this deployment was ingested or activated; nothing was deployed.`);
  }

  /**
   * `ready` with 201 or `failed` with 422; a body that is not a deployment is 422 with no
   * row; 202 with the id when the workflow outlives the request's wait. The environment is
   * read once, here, and goes into the workflow's input; the manifest is stored first, so
   * the workflow carries ids and small values only.
   */
  async ingest(
    tenantId: string,
    environmentName: string,
    body: unknown,
    requestId: string,
    cause: RequestCause,
  ): Promise<IngestAnswer> {
    const arrivedAt = Date.now();
    const gate = IngestGate.safeParse(body);
    if (!gate.success) {
      throw new ApiError('invalid_request', 'An ingest needs "manifest" (an object) and "bundle_ref" (a string).', {
        details: detailsFromZodError(gate.error).filter((detail) => detail.path === 'manifest' || detail.path === 'bundle_ref' || detail.path === '(body)'),
      });
    }
    // Read once, through the call that also moves a preview's expiry (every deploy extends
    // its TTL); an environment being deleted refuses it (409 `environment_deleting`).
    const environment = await this.placement.extendTtl(tenantId, environmentName, requestId);
    const options = IngestOptions.safeParse(body);
    const fieldErrors: ValidationItem[] = options.success
      ? []
      : detailsFromZodError(options.error).map((detail) => ({ code: 'manifest_invalid', path: detail.path, message: `${detail.path} ${detail.message}.` }));
    const fields = options.success ? options.data : undefined;
    return this.deploy(environment, gate.data.manifest, {
      ...newDeploymentIn(tenantId, environment),
      bundleRef: gate.data.bundle_ref,
      git: fields?.git ?? { branch: 'local', sha: 'local' },
      sdkVersion: fields?.sdk_version ?? null,
      activate: fields?.activate ?? true,
      allowContractChanges: fields?.allow_contract_changes ?? stringsOf((body as { allow_contract_changes?: unknown }).allow_contract_changes),
      // Not sent: the caller that made it (its token's id), so the row always names its creator.
      createdBy: fields?.created_by ?? cause.actor,
      fieldErrors,
      ...workflowCauseOf(cause),
    }, requestId, arrivedAt);
  }

  /**
   * A new deployment of `body.environment` with the source's manifest, bundle, git and
   * sdk_version, validated by that environment's own rules (docs/design.md#previews-promotion-and-diffs):
   * answered as an ingest is. The source must be ready; a token limited to environments
   * finds neither a source nor a target outside them (404, as another tenant's).
   */
  async promote(tenantId: string, id: string, body: PromoteRequest, requestId: string, cause: RequestCause, environments: EnvironmentAccess = EnvironmentAccess.ALL): Promise<IngestAnswer> {
    const arrivedAt = Date.now();
    const source = await this.deployments.find(tenantId, id);
    if (!source) {
      // One still being ingested is the caller's, just not ready yet.
      const pending = await this.deployments.pendingOf(tenantId, id);
      if (pending?.environmentName && environments.allows(pending.environmentName)) {
        throw new ApiError('deployment_not_ready', `Deployment ${id} is still being validated; promote it once it is ready.`);
      }
      throw notFound(`Deployment ${id}`);
    }
    if (!environments.allows(source.environment_name)) throw notFound(`Deployment ${id}`);
    if (source.status !== 'ready') {
      throw new ApiError('deployment_not_ready', `Deployment ${id} is ${source.status}; only a ready deployment can be promoted.`);
    }
    if (!environments.allows(body.environment)) throw notFound(`Environment "${body.environment}"`);
    const manifest = await this.deployments.manifest(tenantId, id);
    if (manifest === undefined) throw notFound(`Deployment ${id}`);
    const environment = await this.placement.extendTtl(tenantId, body.environment, requestId);
    return this.deploy(environment, manifest, {
      ...newDeploymentIn(tenantId, environment),
      bundleRef: source.bundle_ref,
      git: { branch: source.git.branch, sha: source.git.sha },
      sdkVersion: source.sdk_version,
      activate: body.activate,
      allowContractChanges: body.allow_contract_changes,
      createdBy: cause.actor,
      promotedFrom: source._id,
      fieldErrors: [],
      ...workflowCauseOf(cause),
    }, requestId, arrivedAt);
  }

  /**
   * Stores the manifest (the workflow carries ids and small values only), runs the ingest
   * workflow, and answers with its row: ready 201, failed 422, or 202 while it still runs.
   */
  private async deploy(environment: Environment, manifest: unknown, input: IngestInput, requestId: string, arrivedAt: number): Promise<IngestAnswer> {
    const { tenantId } = input;
    await this.deployments.storeManifest(tenantId, input.deploymentId, { id: environment.id, name: environment.name }, input.bundleRef, manifest);
    let outcome;
    try {
      outcome = await this.workflows.ingest(input, arrivedAt);
    } catch (error) {
      // A manifest whose start failed stays: a start that timed out may still have begun.
      if (!(error instanceof StillRunningError)) throw await this.deletedMeanwhile(tenantId, environment, requestId) ?? error;
      this.metrics.ingestDuration.observe({ outcome: 'pending' }, (Date.now() - arrivedAt) / 1000);
      return { status: 202, row: { id: input.deploymentId, environment_id: environment.id, status: 'pending' } };
    }
    const row = await this.deployments.find(tenantId, input.deploymentId);
    if (!row) throw (await this.deletedMeanwhile(tenantId, environment, requestId)) ?? new Error(`deployment ${input.deploymentId} was not recorded by its workflow`);
    this.metrics.ingestDuration.observe({ outcome: row.status === 'ready' ? 'ready' : 'failed' }, (Date.now() - arrivedAt) / 1000);
    // Activated by this ingest: the pointer names it (a later activation may move it on).
    const activeId = outcome.recheck ? row._id : environment.active_deployment_id;
    return { status: row.status === 'ready' ? 201 : 422, row: toDeployment(row, activeId, outcome.recheck ?? undefined) };
  }

  /** `environments`: a token limited to environments finds no deployment of another (as another tenant's). */
  async activate(tenantId: string, id: string, cause: RequestCause, environments: EnvironmentAccess = EnvironmentAccess.ALL): Promise<Deployment> {
    const arrivedAt = Date.now();
    const row = await this.deployments.find(tenantId, id);
    if (!row || !environments.allows(row.environment_name)) throw notFound(`Deployment ${id}`);
    if (row.status !== 'ready') {
      throw new ApiError('deployment_not_ready', `Deployment ${id} is ${row.status}; only a ready deployment can be activated.`);
    }
    const environment = await this.placement.findEnvironment(tenantId, row.environment_name);
    if (environment?.id === row.environment_id && environment.status === 'deleting') {
      throw environmentDeleting(row.environment_name);
    }
    try {
      const recheck = await this.workflows.activate({
        deploymentId: id,
        tenantId,
        environmentId: row.environment_id,
        environmentName: row.environment_name,
        ...workflowCauseOf(cause),
      }, arrivedAt);
      return toDeployment(row, row._id, recheck);
    } catch (error) {
      if (!(error instanceof StillRunningError)) throw (environment ? await this.deletedMeanwhile(tenantId, environment) : undefined) ?? error;
      throw new ApiError('unavailable', `Activation of ${id} is still running; POST it again to wait for it, or read GET /api/v1/deployments/${id}.`, {
        headers: { 'Retry-After': '5' },
      });
    }
  }

  /** The row, or, while its ingest still runs (the 202 of an ingest said to poll here), the pending shape. */
  async get(tenantId: string, id: string, requestId: string, environments: EnvironmentAccess = EnvironmentAccess.ALL): Promise<Deployment | DeploymentPending> {
    const row = await this.deployments.find(tenantId, id);
    if (!row) {
      const pending = await this.deployments.pendingOf(tenantId, id);
      // A manifest stored before it named its environment is shown only to a token of the whole tenant.
      const visible = pending && (pending.environmentName === null ? !environments.restricted : environments.allows(pending.environmentName));
      if (!visible) throw notFound(`Deployment ${id}`);
      return { id, environment_id: pending.environmentId, status: 'pending' };
    }
    if (!environments.allows(row.environment_name)) throw notFound(`Deployment ${id}`);
    const environment = await this.placement.findEnvironment(tenantId, row.environment_name, requestId);
    return toDeployment(row, environment?.active_deployment_id ?? null);
  }

  async list(
    tenantId: string,
    environmentName: string,
    query: { activeOnly: boolean; limit?: number; cursor?: string },
    requestId: string,
  ): Promise<Deployment[]> {
    const environment = await this.environment(tenantId, environmentName, requestId);
    const activeId = environment.active_deployment_id;
    if (query.activeOnly) {
      const row = activeId ? await this.deployments.find(tenantId, activeId) : undefined;
      return row ? [toDeployment(row, activeId)] : [];
    }
    const rows = await this.deployments.list(tenantId, environment.id, { limit: query.limit, before: query.cursor });
    return rows.map((row) => toDeployment(row, activeId));
  }
}

/** A new deployment's id and its environment as the ingest's input names them (read once, when the request arrived). */
function newDeploymentIn(tenantId: string, environment: Environment): Pick<IngestInput, 'deploymentId' | 'tenantId' | 'environmentId' | 'environmentName' | 'strict' | 'activeDeploymentId'> {
  return {
    deploymentId: newId('dep'),
    tenantId,
    environmentId: environment.id,
    environmentName: environment.name,
    strict: environment.strict,
    activeDeploymentId: environment.active_deployment_id,
  };
}

/** An ingest's (or a promotion's) answer: the row with 201 or 422, or the pending shape with 202. */
export type IngestAnswer = { status: 201 | 422; row: Deployment } | { status: 202; row: DeploymentPending };

function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}
