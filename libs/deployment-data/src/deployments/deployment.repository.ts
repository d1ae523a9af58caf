import { Schema, type ClientSession, type Connection } from 'mongoose';
import type { DeploymentValidation, GitInfo } from '@envengine/contracts';
import { isDuplicateKeyError } from '@envengine/service-kit';
import { inTransaction, TenantScopedModel } from '@envengine/tenant-data';
import type { BundleRepository } from '../bundles/bundle.repository.ts';

/** A deployment row as stored (the manifest is kept apart, see `ManifestDocument`). */
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
  inserted_at: Date;
}

/**
 * A deployment's manifest, stored under the deployment id before its ingest workflow
 * starts, so that the workflow carries ids only and the activity that validates reads it
 * here. Kept as JSON text: its keys are the user's. Never answered.
 */
interface ManifestDocument {
  _id: string;
  tenant_id: string;
  environment_id: string;
  manifest_json: string;
  /** The bundle the deployment names (absent on manifests stored before bundles were swept). */
  bundle_ref?: string;
  inserted_at: Date;
}

/** The row an ingest writes once it has validated. */
export type DeploymentRecord = Omit<DeploymentDocument, '_id' | 'tenant_id' | 'inserted_at'> & { id: string };

const deploymentSchema = new Schema<DeploymentDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    environment_name: { type: String, required: true },
    status: { type: String, required: true, enum: ['ready', 'failed'] },
    git: { branch: String, sha: String },
    // As sent: a failed ingest records an empty or malformed ref with its validation errors.
    // Mongoose's plain `required` counts "" as missing, and failed that record on every retry.
    bundle_ref: {
      type: String,
      required: function (this: DeploymentDocument) {
        return typeof this.bundle_ref !== 'string';
      },
    },
    sdk_version: { type: String, default: null },
    validation: { type: Schema.Types.Mixed, required: true },
    allow_contract_changes: { type: [String], required: true },
    created_by: { type: String, default: null },
    inserted_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'deployments' },
);
// Listing an environment's deployments, newest first; single reads go by `_id`.
deploymentSchema.index({ tenant_id: 1, environment_id: 1, _id: -1 });
// The bundle sweep's question: does a deployment name this bundle?
deploymentSchema.index({ tenant_id: 1, bundle_ref: 1 });

const manifestSchema = new Schema<ManifestDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    manifest_json: { type: String, required: true },
    bundle_ref: { type: String },
    inserted_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'deployment_manifests' },
);
// An environment's manifests (its tear-down removes them).
manifestSchema.index({ tenant_id: 1, environment_id: 1 });
manifestSchema.index({ tenant_id: 1, bundle_ref: 1 });

/** Deployments and their manifests, one tenant at a time; every query carries the tenant. */
export class DeploymentRepository {
  private readonly rows: TenantScopedModel<DeploymentDocument>;
  private readonly manifests: TenantScopedModel<ManifestDocument>;

  /** @param bundles the same scope's bundles: a stored manifest marks the bundle it names as referenced. */
  constructor(
    private readonly connection: Connection,
    private readonly bundles: BundleRepository,
  ) {
    this.rows = TenantScopedModel.of(connection, 'Deployment', deploymentSchema);
    this.manifests = TenantScopedModel.of(connection, 'DeploymentManifest', manifestSchema);
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([this.rows.ensureIndexes(), this.manifests.ensureIndexes()]);
  }

  /**
   * Keeps the manifest of a deployment about to be ingested, and marks the bundle it names
   * as referenced in the same transaction: from then on the bundle sweep sees a deployment
   * naming it. A bundle already gone is not refused here; the ingest reports it.
   */
  async storeManifest(tenantId: string, deploymentId: string, environmentId: string, bundleRef: string, manifest: unknown): Promise<void> {
    const manifestJson = JSON.stringify(manifest);
    await inTransaction(this.connection, async (session) => {
      await this.bundles.markReferenced(tenantId, bundleRef, session);
      await this.manifests.insert(tenantId, { _id: deploymentId, environment_id: environmentId, manifest_json: manifestJson, bundle_ref: bundleRef, inserted_at: new Date() }, { session });
    });
  }

  /** Whether a deployment of the tenant names the bundle: its manifest, or (stored before manifests named it) its row. */
  async namesBundle(tenantId: string, bundleRef: string, session?: ClientSession): Promise<boolean> {
    // One after the other: a transaction's session runs one operation at a time.
    if ((await this.manifests.count(tenantId, { bundle_ref: bundleRef }, { session, limit: 1 })) > 0) return true;
    return (await this.rows.count(tenantId, { bundle_ref: bundleRef }, { session, limit: 1 })) > 0;
  }

  /** The stored manifest, or undefined when the tenant has no such deployment. */
  async manifest(tenantId: string, deploymentId: string): Promise<unknown> {
    const doc = await this.manifests.findOne(tenantId, { _id: deploymentId }, { projection: { manifest_json: 1 } });
    return doc ? (JSON.parse(doc.manifest_json) as unknown) : undefined;
  }

  /** Inserts the row under its id; a retried activity finds it there and changes nothing. */
  async recordOnce(tenantId: string, record: DeploymentRecord, insertedAt: Date): Promise<void> {
    const { id, ...fields } = record;
    try {
      await this.rows.insert(tenantId, { _id: id, ...fields, inserted_at: insertedAt });
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
  }

  async find(tenantId: string, id: string): Promise<DeploymentDocument | undefined> {
    return (await this.rows.findOne(tenantId, { _id: id })) ?? undefined;
  }

  /** Newest first; `before` pages on from the last id of the previous page. */
  list(tenantId: string, environmentId: string, page: { limit?: number; before?: string }): Promise<DeploymentDocument[]> {
    return this.rows.find(
      tenantId,
      { environment_id: environmentId, ...(page.before ? { _id: { $lt: page.before } } : {}) },
      { sort: { _id: -1 }, limit: page.limit },
    );
  }

  /** Removes the environment's deployments and manifests (its tear-down); how many of each. */
  async removeAllOf(tenantId: string, environmentId: string): Promise<{ deployments: number; manifests: number }> {
    const deployments = await this.rows.deleteMany(tenantId, { environment_id: environmentId });
    const manifests = await this.manifests.deleteMany(tenantId, { environment_id: environmentId });
    return { deployments, manifests };
  }
}
