import {
  ENGINE_TENANT_ID,
  InternalApi,
  PublicApi,
  type Environment,
  type ExpireEnvironmentResult,
  type ExpiryNoticeResult,
  type PoolTokenOwner,
  type PublishEventsResult,
  type RecordedEvent,
  type PurgeFilesRequest,
  type PurgeFilesResult,
  type ReconcileSchedulesRequest,
  type ReconcileSchedulesResult,
  type SchedulesRemoved,
  type SetActiveDeploymentRequest,
  type TeardownStepReport,
  type TickShardResult,
} from '@envengine/contracts';
import { ApiError } from '@envengine/service-kit';
import { InternalHttpClient, type InternalHttpClientOptions } from './internal-http-client.ts';

/** Tenant header of a pool-token lookup, which happens before the tenant is known: the engine's own id, which no tenant has. */
export const POOL_TOKEN_LOOKUP_TENANT = ENGINE_TENANT_ID;

/** The placement-service's internal API, as other services use it. */
export class PlacementClient {
  private readonly http: InternalHttpClient;

  constructor(options: Omit<InternalHttpClientOptions, 'service'>) {
    this.http = new InternalHttpClient({ ...options, service: 'placement-service' });
  }

  /** The tenant's environment of that name, or undefined when it has none (the public route, reached directly). */
  async findEnvironment(tenantId: string, name: string, requestId?: string): Promise<Environment | undefined> {
    try {
      return await this.http.request(PublicApi.getEnvironment, { tenantId, requestId, params: { name } });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  /** Internal: a scope's outbox relay hands a batch of events (of any tenants) to the audit log, under the engine's id. */
  publishEvents(events: RecordedEvent[]): Promise<PublishEventsResult> {
    return this.http.request(InternalApi.publishEvents, { tenantId: ENGINE_TENANT_ID, body: { events } });
  }

  /** Internal: points the environment at a deployment (activation's last step). */
  setActiveDeployment(tenantId: string, environmentName: string, request: SetActiveDeploymentRequest): Promise<Environment> {
    return this.http.request(InternalApi.setActiveDeployment, { tenantId, params: { name: environmentName }, body: request });
  }

  /** Internal: a deploy arrived; a preview's expiry moves to its TTL from now (409 `environment_deleting` while it is deleted). */
  extendTtl(tenantId: string, environmentName: string, requestId?: string): Promise<Environment> {
    return this.http.request(InternalApi.extendEnvironmentTtl, { tenantId, requestId, params: { name: environmentName } });
  }

  /** Internal: the expiry timer fired (the placement-service decides against the stored expiry). */
  expire(tenantId: string, environmentId: string): Promise<ExpireEnvironmentResult> {
    return this.http.request(InternalApi.expireEnvironment, { tenantId, params: { id: environmentId } });
  }

  /** Internal: the expiry timer's notice that the TTL lapses soon (records `environment.expiring` once). */
  noticeExpiry(tenantId: string, environmentId: string, expiresAt: string): Promise<ExpiryNoticeResult> {
    return this.http.request(InternalApi.noticeEnvironmentExpiry, { tenantId, params: { id: environmentId }, body: { expires_at: expiresAt } });
  }

  /** Internal, a tear-down step: the environment's runs canceled and removed. */
  removeEnvironmentRuns(tenantId: string, environmentId: string): Promise<TeardownStepReport> {
    return this.http.request(InternalApi.removeEnvironmentRuns, { tenantId, params: { id: environmentId } });
  }

  /** Internal, a tear-down step: materialization files removed (`purge_data`). */
  purgeFiles(tenantId: string, environmentId: string, request: PurgeFilesRequest): Promise<PurgeFilesResult> {
    return this.http.request(InternalApi.purgeEnvironmentFiles, { tenantId, params: { id: environmentId }, body: request });
  }

  /** Internal, the tear-down's last step: the environment's document removed. */
  async removeEnvironment(tenantId: string, environmentId: string): Promise<void> {
    await this.http.request(InternalApi.removeEnvironment, { tenantId, params: { id: environmentId } });
  }

  /** Internal, activation: the environment's stored schedules become these (its deployment's). */
  reconcileSchedules(tenantId: string, environmentId: string, request: ReconcileSchedulesRequest): Promise<ReconcileSchedulesResult> {
    return this.http.request(InternalApi.reconcileSchedules, { tenantId, params: { id: environmentId }, body: request });
  }

  /** Internal, a tear-down step: the environment's stored schedules removed. */
  removeSchedules(tenantId: string, environmentId: string): Promise<SchedulesRemoved> {
    return this.http.request(InternalApi.removeSchedules, { tenantId, params: { id: environmentId } });
  }

  /** Internal, a tick loop's pass: the shard's due schedules ticked (engine-wide, under the engine's own id). */
  tickSchedules(shard: number): Promise<TickShardResult> {
    return this.http.request(InternalApi.tickSchedules, { tenantId: ENGINE_TENANT_ID, params: { shard } });
  }

  /**
   * The gateway's lookup of a pool token (by its hash): the tenant and credential it
   * belongs to, or undefined when it is unknown or revoked. Asked with no tenant yet, so
   * under the placeholder tenant the internal API accepts for this call only.
   */
  async poolTokenOwner(tokenHash: string): Promise<PoolTokenOwner | undefined> {
    try {
      return await this.http.request(InternalApi.poolTokenOwner, { tenantId: POOL_TOKEN_LOOKUP_TENANT, params: { hash: tokenHash } });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
