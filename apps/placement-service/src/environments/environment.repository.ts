import type { ClientSession, Connection } from 'mongoose';
import type { CreateEnvironmentRequest, Environment, Executor, PatchEnvironmentRequest } from '@envengine/contracts';
import { newId } from '@envengine/resource-ids';
import { ApiError, isDuplicateKeyError } from '@envengine/service-kit';
import { TenantScopedModel } from '@envengine/tenant-data';
import { environmentSchema, type EnvironmentDocument } from './environment.schema.ts';

function toEnvironment(doc: EnvironmentDocument): Environment {
  return {
    id: doc._id,
    name: doc.name,
    kind: doc.kind,
    git_ref: doc.git_ref ?? null,
    storage_prefix: doc.storage_prefix,
    strict: doc.strict,
    schedules_paused: doc.schedules_paused,
    schedules_paused_reason: doc.schedules_paused_reason ?? null,
    executor: doc.executor,
    egress: doc.egress ?? 'none',
    active_deployment_id: doc.active_deployment_id ?? null,
    inserted_at: doc.inserted_at.toISOString(),
  };
}

/**
 * Environments of one tenant at a time: every method takes the tenant id first, so no
 * query can be written without the tenant filter. Returns plain objects only.
 */
/** Why a new preview environment's schedules are paused. */
export const PREVIEW_PAUSE_REASON = 'preview environment: schedules start paused; resume to run them';

export class EnvironmentRepository {
  private readonly environments: TenantScopedModel<EnvironmentDocument>;

  constructor(connection: Connection) {
    this.environments = TenantScopedModel.of(connection, 'Environment', environmentSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.environments.ensureIndexes();
  }

  async create(tenantId: string, input: CreateEnvironmentRequest): Promise<Environment> {
    const now = new Date();
    const fields: Omit<EnvironmentDocument, 'tenant_id'> = {
      _id: newId('env', now.getTime()),
      name: input.name,
      kind: input.kind,
      storage_prefix: input.storage_prefix,
      strict: input.strict,
      executor: input.executor,
      egress: input.egress,
      // A preview never writes on a timer by surprise: its schedules wait for an explicit resume.
      schedules_paused: input.kind === 'preview',
      schedules_paused_reason: input.kind === 'preview' ? PREVIEW_PAUSE_REASON : null,
      active_deployment_id: null,
      git_ref: null,
      inserted_at: now,
      updated_at: now,
    };
    let doc: EnvironmentDocument;
    try {
      doc = await this.environments.insert(tenantId, fields);
    } catch (error) {
      if (isDuplicateKeyError(error)) {
        throw new ApiError('environment_exists', `An environment named "${input.name}" already exists.`, {
          details: [{ path: 'name', message: 'is already taken' }],
        });
      }
      throw error;
    }
    return toEnvironment(doc);
  }

  async list(tenantId: string): Promise<Environment[]> {
    const docs = await this.environments.find(tenantId, {}, { sort: { _id: 1 } });
    return docs.map(toEnvironment);
  }

  async findByName(tenantId: string, name: string): Promise<Environment | undefined> {
    const doc = await this.environments.findOne(tenantId, { name });
    return doc ? toEnvironment(doc) : undefined;
  }

  async findById(tenantId: string, id: string): Promise<Environment | undefined> {
    const doc = await this.environments.findOne(tenantId, { _id: id });
    return doc ? toEnvironment(doc) : undefined;
  }

  /** The executor a new attempt is placed on, read inside the caller's transaction. */
  async executorOf(tenantId: string, id: string, session?: ClientSession): Promise<Executor | undefined> {
    const doc = await this.environments.findOne(tenantId, { _id: id }, { projection: { executor: 1 }, session });
    return doc?.executor;
  }

  /**
   * Admits a schedule's run inside the caller's transaction unless the schedules are paused.
   * The count is written so that a pause racing the transaction conflicts with it instead of
   * passing it unseen (a transaction's reads alone do not conflict with anything).
   */
  async admitScheduledRun(tenantId: string, id: string, session: ClientSession): Promise<boolean> {
    const { matched } = await this.environments.updateOne(tenantId, { _id: id, schedules_paused: false }, { $inc: { scheduled_runs_admitted: 1 } }, { session });
    return matched === 1;
  }

  /** The settings of a PATCH, in one update. */
  async patch(tenantId: string, name: string, patch: PatchEnvironmentRequest): Promise<Environment | undefined> {
    return this.update(tenantId, name, {
      ...(patch.egress === undefined ? {} : { egress: patch.egress }),
      ...(patch.strict === undefined ? {} : { strict: patch.strict }),
    });
  }

  async setExecutor(tenantId: string, name: string, executor: Executor): Promise<Environment | undefined> {
    return this.update(tenantId, name, { executor });
  }

  /** Sets the executor of every environment the tenant owns; returns them all. */
  async setExecutorForAll(tenantId: string, executor: Executor): Promise<Environment[]> {
    await this.environments.updateMany(tenantId, {}, { $set: { executor, updated_at: new Date() } });
    return this.list(tenantId);
  }

  /** Pausing again without a reason keeps the reason already given, so a repeat changes nothing. */
  async pauseSchedules(tenantId: string, name: string, reason: string | undefined): Promise<Environment | undefined> {
    return this.update(
      tenantId,
      name,
      reason === undefined ? { schedules_paused: true } : { schedules_paused: true, schedules_paused_reason: reason },
    );
  }

  async resumeSchedules(tenantId: string, name: string): Promise<Environment | undefined> {
    return this.update(tenantId, name, { schedules_paused: false, schedules_paused_reason: null });
  }

  /** Points the environment at a deployment; `git_ref` follows its git sha. */
  async setActiveDeployment(tenantId: string, name: string, deploymentId: string, gitRef: string): Promise<Environment | undefined> {
    return this.update(tenantId, name, { active_deployment_id: deploymentId, git_ref: gitRef });
  }

  private async update(
    tenantId: string,
    name: string,
    fields: Partial<Pick<EnvironmentDocument, 'executor' | 'egress' | 'strict' | 'schedules_paused' | 'schedules_paused_reason' | 'active_deployment_id' | 'git_ref'>>,
  ): Promise<Environment | undefined> {
    const doc = await this.environments.findOneAndUpdate(tenantId, { name }, { $set: { ...fields, updated_at: new Date() } });
    return doc ? toEnvironment(doc) : undefined;
  }
}
