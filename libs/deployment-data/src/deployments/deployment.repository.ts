import { Schema, type Connection, type Model } from 'mongoose';
import type { DeploymentValidation, GitInfo, RecordDeploymentRequest } from '@envengine/contracts';
import { ensureCollectionAndIndexes, isDuplicateKeyError, modelFor } from '@envengine/service-kit';
import { TenantScopedModel } from '@envengine/tenant-data';

/** A deployment as stored. The manifest is kept as JSON text (its keys are the user's) and never answered. */
export interface DeploymentDocument {
  _id: string;
  tenant_id: string;
  environment_id: string;
  environment_name: string;
  status: 'ready' | 'failed';
  git: GitInfo;
  bundle_ref: string;
  sdk_version: string | null;
  validation: DeploymentValidation;
  allow_contract_changes: string[];
  created_by: string | null;
  manifest_json: string;
  inserted_at: Date;
}

const deploymentSchema = new Schema<DeploymentDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    environment_name: { type: String, required: true },
    status: { type: String, required: true },
    git: { branch: String, sha: String },
    bundle_ref: { type: String, required: true },
    sdk_version: { type: String, default: null },
    validation: { type: Schema.Types.Mixed, required: true },
    allow_contract_changes: { type: [String], required: true },
    created_by: { type: String, default: null },
    manifest_json: { type: String, required: true },
    inserted_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'deployments' },
);
// Listing an environment's deployments, newest first; single reads go by `_id`.
deploymentSchema.index({ tenant_id: 1, environment_id: 1, _id: -1 });

const WITHOUT_MANIFEST = { manifest_json: 0 } as const;

/** Deployments of one tenant at a time; every query carries the tenant. */
export class DeploymentRepository {
  private readonly model: Model<DeploymentDocument>;
  private readonly deployments: TenantScopedModel<DeploymentDocument>;

  constructor(connection: Connection) {
    this.model = modelFor(connection, 'Deployment', deploymentSchema);
    this.deployments = new TenantScopedModel(this.model);
  }

  async ensureIndexes(): Promise<void> {
    await ensureCollectionAndIndexes(this.model);
  }

  /** Inserts the row under its id; a retried activity finds it there and changes nothing. */
  async recordOnce(record: RecordDeploymentRequest, insertedAt: Date): Promise<void> {
    try {
      await this.deployments.insert(record.tenantId, {
        _id: record.deploymentId,
        environment_id: record.environmentId,
        environment_name: record.environmentName,
        status: record.status,
        git: record.git,
        bundle_ref: record.bundleRef,
        sdk_version: record.sdkVersion,
        validation: record.validation,
        allow_contract_changes: record.allowContractChanges,
        created_by: record.createdBy,
        manifest_json: JSON.stringify(record.manifest),
        inserted_at: insertedAt,
      });
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
  }

  async find(tenantId: string, id: string): Promise<Omit<DeploymentDocument, 'manifest_json'> | undefined> {
    return (await this.deployments.findOne(tenantId, { _id: id }, { projection: WITHOUT_MANIFEST })) ?? undefined;
  }

  /** Newest first; `before` pages on from the last id of the previous page. */
  async list(
    tenantId: string,
    environmentId: string,
    page: { limit?: number; before?: string },
  ): Promise<Array<Omit<DeploymentDocument, 'manifest_json'>>> {
    return this.deployments.find(
      tenantId,
      { environment_id: environmentId, ...(page.before ? { _id: { $lt: page.before } } : {}) },
      { projection: WITHOUT_MANIFEST, sort: { _id: -1 }, limit: page.limit },
    );
  }

  async manifest(tenantId: string, id: string): Promise<unknown> {
    return (await this.withManifest(tenantId, id))?.manifest;
  }

  /** The deployment's environment and its manifest, in one read. */
  async withManifest(tenantId: string, id: string): Promise<{ environmentId: string; manifest: unknown } | undefined> {
    const doc = await this.deployments.findOne(tenantId, { _id: id }, { projection: { manifest_json: 1, environment_id: 1 } });
    if (!doc) return undefined;
    return { environmentId: doc.environment_id, manifest: JSON.parse(doc.manifest_json) as unknown };
  }
}
