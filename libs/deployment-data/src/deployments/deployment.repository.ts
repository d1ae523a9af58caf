import { Schema, type ClientSession, type Connection } from 'mongoose';
import type { DeploymentValidation, GitInfo, Recheck } from '@envengine/contracts';
import type { EventCause, EventOutbox } from '@envengine/event-log';
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
  /** The deployment this one was promoted from (absent on rows written before promotions). */
  promoted_from?: string | null;
  inserted_at: Date;
  /**
   * Whether this is the deployment the environment was last activated to, as this scope
   * recorded it (the pointer itself is the placement-service's): one per environment at
   * most. Absent on rows written before activations were recorded here.
   */
  active?: boolean;
  /** When an activation last made it the active one. */
  activated_at?: Date | null;
  /** The deployment that was active before that activation (null: none was); a diff's default base. */
  previous_active_id?: string | null;
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
  /** The environment's name, so that a pending ingest can be shown to a token limited by names (absent on manifests stored before). */
  environment_name?: string;
  manifest_json: string;
  /** The bundle the deployment names (absent on manifests stored before bundles were swept). */
  bundle_ref?: string;
  inserted_at: Date;
}

/** The row an ingest writes once it has validated. */
export type DeploymentRecord = Omit<DeploymentDocument, '_id' | 'tenant_id' | 'inserted_at' | 'active' | 'activated_at' | 'previous_active_id'> & { id: string };

/** An activation that moved the environment's pointer, as the deployment scope records it. */
export interface ActivationRecord {
  environment: { id: string; name: string };
  deploymentId: string;
  recheck: Recheck;
  /**
   * The deployment the pointer named before, as the placement-service answered it before
   * the move: used only when this scope has no active row of the environment (one
   * activated before activations were recorded here).
   */
  pointerBefore: string | null;
  cause: EventCause;
}

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
    promoted_from: { type: String, default: null },
    inserted_at: { type: Date, required: true },
    active: { type: Boolean },
    activated_at: { type: Date },
    previous_active_id: { type: String },
  },
  { versionKey: false, collection: 'deployments' },
);
// Listing an environment's deployments, newest first; single reads go by `_id`.
deploymentSchema.index({ tenant_id: 1, environment_id: 1, _id: -1 });
// The bundle sweep's question: does a deployment name this bundle?
deploymentSchema.index({ tenant_id: 1, bundle_ref: 1 });
// An environment's active deployment, as activations recorded it: one at most.
deploymentSchema.index({ tenant_id: 1, environment_id: 1 }, { unique: true, partialFilterExpression: { active: true }, name: 'active_per_environment' });

const manifestSchema = new Schema<ManifestDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    environment_id: { type: String, required: true },
    environment_name: { type: String },
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

  /**
   * @param bundles the same scope's bundles: a stored manifest marks the bundle it names as referenced.
   * @param outbox the scope's event outbox: an ingest's outcome and an activation write their event in their own transaction.
   */
  constructor(
    private readonly connection: Connection,
    private readonly bundles: BundleRepository,
    private readonly outbox: EventOutbox,
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
  async storeManifest(tenantId: string, deploymentId: string, environment: { id: string; name: string }, bundleRef: string, manifest: unknown): Promise<void> {
    const manifestJson = JSON.stringify(manifest);
    await inTransaction(this.connection, async (session) => {
      await this.bundles.markReferenced(tenantId, bundleRef, session);
      await this.manifests.insert(
        tenantId,
        { _id: deploymentId, environment_id: environment.id, environment_name: environment.name, manifest_json: manifestJson, bundle_ref: bundleRef, inserted_at: new Date() },
        { session },
      );
    });
  }

  /** A deployment whose manifest is stored but whose row is not yet written (its ingest still runs): where it belongs. */
  async pendingOf(tenantId: string, deploymentId: string): Promise<{ environmentId: string; environmentName: string | null } | undefined> {
    const doc = await this.manifests.findOne(tenantId, { _id: deploymentId }, { projection: { environment_id: 1, environment_name: 1 } });
    return doc ? { environmentId: doc.environment_id, environmentName: doc.environment_name ?? null } : undefined;
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

  /**
   * Inserts the row under its id with its event (`deployment.ready` or `deployment.failed`)
   * in one transaction; a retried activity finds the row there and changes nothing, nor
   * records a second event. Whether this call wrote it.
   */
  async recordOnce(tenantId: string, record: DeploymentRecord, insertedAt: Date, cause: EventCause): Promise<boolean> {
    const { id, ...fields } = record;
    const environment = { id: record.environment_id, name: record.environment_name };
    const subject = { kind: 'deployment' as const, id };
    try {
      await inTransaction(this.connection, async (session) => {
        await this.rows.insert(tenantId, { _id: id, ...fields, inserted_at: insertedAt }, { session });
        await this.outbox.record(
          tenantId,
          record.status === 'ready'
            ? { type: 'deployment.ready', environment, subject, cause, data: { bundle_ref: record.bundle_ref, warnings: record.validation.warnings.length } }
            : { type: 'deployment.failed', environment, subject, cause, data: { bundle_ref: record.bundle_ref, error_codes: [...new Set(record.validation.errors.map((error) => error.code))] } },
          session,
        );
      });
      return true;
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
      return false;
    }
  }

  /**
   * Records that an activation moved the environment's pointer to the deployment: it
   * becomes the environment's active row (the one before it no longer is), with its
   * `deployment.activated` event, in one transaction. Nothing changes, and no event is
   * written, when it is the active row already (a retried activation, or one of the
   * deployment the environment already ran), or when the row is gone (a tear-down).
   * Whether this call changed it.
   */
  async recordActivation(tenantId: string, activation: ActivationRecord): Promise<boolean> {
    const { environment, deploymentId, recheck, cause } = activation;
    return inTransaction(this.connection, async (session) => {
      // One after the other: a transaction's session runs one operation at a time.
      const current = await this.rows.findOne(tenantId, { environment_id: environment.id, active: true }, { session, projection: { _id: 1 } });
      if (current?._id === deploymentId) return false;
      const target = await this.rows.findOne(tenantId, { _id: deploymentId, environment_id: environment.id, status: 'ready' }, { session, projection: { _id: 1 } });
      if (!target) return false;
      // The one before first: the index holds one active row per environment.
      if (current) await this.rows.updateOne(tenantId, { _id: current._id, active: true }, { $set: { active: false } }, { session });
      const previous = current?._id ?? (activation.pointerBefore !== deploymentId ? activation.pointerBefore : null);
      await this.rows.updateOne(tenantId, { _id: deploymentId }, { $set: { active: true, activated_at: new Date(), previous_active_id: previous } }, { session });
      await this.outbox.record(
        tenantId,
        {
          type: 'deployment.activated',
          environment,
          subject: { kind: 'deployment', id: deploymentId },
          cause,
          data: { previous_deployment_id: previous, checked: recheck.checked, quarantined: [...recheck.quarantined] },
        },
        session,
      );
      return true;
    });
  }

  /** The environment's active deployment as activations recorded it here; undefined before the first one recorded. */
  async recordedActive(tenantId: string, environmentId: string): Promise<string | undefined> {
    return (await this.rows.findOne(tenantId, { environment_id: environmentId, active: true }, { projection: { _id: 1 } }))?._id;
  }

  /**
   * The deployment of the environment activated last before `at`, other than `excluding`:
   * a diff's default base for a row activated before activations named the one before.
   */
  async activatedBefore(tenantId: string, environmentId: string, at: Date, excluding: string): Promise<string | undefined> {
    const [row] = await this.rows.find(
      tenantId,
      { environment_id: environmentId, _id: { $ne: excluding }, activated_at: { $lt: at } },
      { sort: { activated_at: -1 }, limit: 1, projection: { _id: 1 } },
    );
    return row?._id;
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
