// Names, inputs and activity signatures shared by the deployment-service (which starts
// the workflows), the workflow-worker (which runs them) and the workflow code itself.
import type { GitInfo, Recheck, RecordDeploymentRequest, ValidationItem } from '@envengine/contracts';

export const DEFAULT_TASK_QUEUE = 'deployments';
export const INGEST_WORKFLOW = 'ingestDeployment';
export const ACTIVATE_WORKFLOW = 'activateDeployment';

/** Meaningful ids, so the Temporal UI says what each workflow is for. */
export const ingestWorkflowId = (deploymentId: string) => `ingest-${deploymentId}`;
export const activateWorkflowId = (deploymentId: string) => `activate-${deploymentId}`;

/** Shown in the Temporal UI beside every workflow. */
export interface DeploymentMemo {
  tenant_id: string;
  environment: string;
  environment_id: string;
  deployment_id: string;
}

export interface IngestInput {
  deploymentId: string;
  tenantId: string;
  environmentId: string;
  environmentName: string;
  bundleRef: string;
  manifest: unknown;
  git: GitInfo;
  sdkVersion: string | null;
  activate: boolean;
  allowContractChanges: string[];
  createdBy: string | null;
  /** Problems with the ingest fields beside the manifest; they fail the deployment. */
  fieldErrors: ValidationItem[];
}

export interface IngestOutcome {
  deploymentId: string;
  status: 'ready' | 'failed';
  recheck: Recheck | null;
}

export interface ActivateInput {
  deploymentId: string;
  tenantId: string;
  environmentId: string;
  environmentName: string;
}

export interface IngestContext {
  strict: boolean;
  bindings: Array<{ name: string; mode: 'live' | 'read_only' }>;
  /** File paths of the bundle, or null when the tenant has no such bundle. */
  bundleEntries: string[] | null;
  /** The manifest of the environment's active deployment, or null. */
  activeManifest: unknown;
}

/** The row the ingest writes: the internal API's request shape, defined once in contracts. */
export type DeploymentRecord = RecordDeploymentRequest;

/** The activities both workflows call; the workflow-worker implements them. */
export interface DeploymentActivities {
  loadIngestContext(input: { tenantId: string; environmentName: string; bundleRef: string }): Promise<IngestContext>;
  /** Writes the row once: a retry finds it written and changes nothing. */
  recordDeployment(record: DeploymentRecord): Promise<void>;
  /** Takes the environment's activation lock, or fails (retryably) while another activation holds it. */
  acquireActivationLock(input: { tenantId: string; environmentId: string; holder: string }): Promise<void>;
  releaseActivationLock(input: { tenantId: string; environmentId: string; holder: string }): Promise<void>;
  /** Compares stored columns with the target's schemas and quarantines mismatching latests. */
  recheckAssets(input: { tenantId: string; deploymentId: string }): Promise<Recheck>;
  /** Points the environment at the deployment (and its git sha). */
  movePointer(input: { tenantId: string; environmentName: string; deploymentId: string }): Promise<void>;
}
