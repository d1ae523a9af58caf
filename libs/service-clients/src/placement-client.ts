import { z } from 'zod';
import {
  Environment,
  ExpireEnvironmentResult,
  PoolTokenOwner,
  TeardownStepReport,
  type PurgeFilesRequest,
  PurgeFilesResult,
  ENGINE_TENANT_ID,
  ReconcileSchedulesResult,
  type ReconcileSchedulesRequest,
  TickShardResult,
  type SetActiveDeploymentRequest,
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

  /** The tenant's environment of that name, or undefined when it has none. */
  async findEnvironment(tenantId: string, name: string, requestId?: string): Promise<Environment | undefined> {
    try {
      return await this.http.call(Environment, {
        method: 'GET',
        path: `/api/v1/environments/${encodeURIComponent(name)}`,
        tenantId,
        requestId,
      });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  /** Internal: points the environment at a deployment (activation's last step). */
  setActiveDeployment(tenantId: string, environmentName: string, request: SetActiveDeploymentRequest): Promise<Environment> {
    return this.http.call(Environment, {
      method: 'POST',
      path: `/internal/v1/environments/${encodeURIComponent(environmentName)}/active-deployment`,
      tenantId,
      body: request,
    });
  }

  /** Internal: a deploy arrived; a preview's expiry moves to its TTL from now (409 `environment_deleting` while it is deleted). */
  extendTtl(tenantId: string, environmentName: string, requestId?: string): Promise<Environment> {
    return this.http.call(Environment, {
      method: 'POST',
      path: `/internal/v1/environments/${encodeURIComponent(environmentName)}/ttl-extension`,
      tenantId,
      requestId,
    });
  }

  /** Internal: the expiry timer fired (the placement-service decides against the stored expiry). */
  expire(tenantId: string, environmentId: string): Promise<ExpireEnvironmentResult> {
    return this.http.call(ExpireEnvironmentResult, {
      method: 'POST',
      path: `/internal/v1/environments/${encodeURIComponent(environmentId)}/expire`,
      tenantId,
    });
  }

  /** Internal, a tear-down step: the environment's runs canceled and removed. */
  removeEnvironmentRuns(tenantId: string, environmentId: string): Promise<TeardownStepReport> {
    return this.http.call(TeardownStepReport, {
      method: 'POST',
      path: `/internal/v1/environments/${encodeURIComponent(environmentId)}/teardown/runs`,
      tenantId,
    });
  }

  /** Internal, a tear-down step: materialization files removed (`purge_data`). */
  purgeFiles(tenantId: string, environmentId: string, request: PurgeFilesRequest): Promise<PurgeFilesResult> {
    return this.http.call(PurgeFilesResult, {
      method: 'POST',
      path: `/internal/v1/environments/${encodeURIComponent(environmentId)}/teardown/files`,
      tenantId,
      body: request,
    });
  }

  /** Internal, the tear-down's last step: the environment's document removed. */
  async removeEnvironment(tenantId: string, environmentId: string): Promise<void> {
    await this.http.call(z.object({ removed: z.number() }), {
      method: 'DELETE',
      path: `/internal/v1/environments/${encodeURIComponent(environmentId)}`,
      tenantId,
    });
  }

  /** Internal, activation: the environment's stored schedules become these (its deployment's). */
  reconcileSchedules(tenantId: string, environmentId: string, request: ReconcileSchedulesRequest): Promise<ReconcileSchedulesResult> {
    return this.http.call(ReconcileSchedulesResult, {
      method: 'PUT',
      path: `/internal/v1/environments/${encodeURIComponent(environmentId)}/schedules`,
      tenantId,
      body: request,
    });
  }

  /** Internal, a tear-down step: the environment's stored schedules removed. */
  removeSchedules(tenantId: string, environmentId: string): Promise<{ deleted: number }> {
    return this.http.call(z.object({ deleted: z.number() }), {
      method: 'DELETE',
      path: `/internal/v1/environments/${encodeURIComponent(environmentId)}/schedules`,
      tenantId,
    });
  }

  /** Internal, a tick loop's pass: the shard's due schedules ticked (engine-wide, under the engine's own id). */
  tickSchedules(shard: number): Promise<TickShardResult> {
    return this.http.call(TickShardResult, { method: 'POST', path: `/internal/v1/schedule-ticks/${shard}`, tenantId: ENGINE_TENANT_ID });
  }

  /**
   * The gateway's lookup of a pool token (by its hash): the tenant and credential it
   * belongs to, or undefined when it is unknown or revoked. Asked with no tenant yet, so
   * under the placeholder tenant the internal API accepts for this call only.
   */
  async poolTokenOwner(tokenHash: string): Promise<PoolTokenOwner | undefined> {
    try {
      return await this.http.call(PoolTokenOwner, {
        method: 'GET',
        path: `/internal/v1/pool/tokens/${encodeURIComponent(tokenHash)}`,
        tenantId: POOL_TOKEN_LOOKUP_TENANT,
      });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
