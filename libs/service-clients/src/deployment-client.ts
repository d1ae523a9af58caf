import {
  DeploymentQuotas,
  DeploymentRunSpec,
  Materialization,
  MaterializationRetracted,
  type RecordMaterializationRequest,
} from '@envengine/contracts';
import { ApiError } from '@envengine/service-kit';
import { InternalHttpClient, type InternalHttpClientOptions } from './internal-http-client.ts';

/**
 * The deployment-service's internal API, for other scopes. The scope's own
 * workflow-worker never uses it (it shares the scope's data-access lib). The
 * placement-service uses it for runs: the deployment a run executes against, and an
 * attempt's materializations.
 */
export class DeploymentClient {
  private readonly http: InternalHttpClient;

  constructor(options: Omit<InternalHttpClientOptions, 'service'>) {
    this.http = new InternalHttpClient({ ...options, service: 'deployment-service' });
  }

  recordMaterialization(tenantId: string, request: RecordMaterializationRequest): Promise<Materialization> {
    return this.http.call(Materialization, { method: 'POST', path: '/internal/v1/materializations', tenantId, body: request });
  }

  /** Takes back a materialization `attemptId` recorded (its lease was superseded before the outcome was written). */
  async retractMaterialization(tenantId: string, id: string, attemptId: string): Promise<boolean> {
    const answer = await this.http.call(MaterializationRetracted, {
      method: 'POST',
      path: `/internal/v1/materializations/${encodeURIComponent(id)}/retract`,
      tenantId,
      body: { attempt_id: attemptId },
    });
    return answer.retracted;
  }

  /** Internal: the tenant's stored-bundle quota, its limit and use (a part of `GET /quotas`). */
  quotas(tenantId: string, requestId?: string): Promise<DeploymentQuotas> {
    return this.http.call(DeploymentQuotas, { method: 'GET', path: '/internal/v1/quotas', tenantId, requestId });
  }

  /** The deployment with its manifest, or undefined when the tenant has no such deployment. */
  async runSpec(tenantId: string, deploymentId: string, requestId?: string): Promise<DeploymentRunSpec | undefined> {
    try {
      return await this.http.call(DeploymentRunSpec, {
        method: 'GET',
        path: `/internal/v1/deployments/${encodeURIComponent(deploymentId)}/run-spec`,
        tenantId,
        requestId,
      });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  /** `ctx.read(key)`: the asset's newest materialization that is not quarantined, or null. */
  latestUsableMaterialization(tenantId: string, environmentId: string, assetKey: string): Promise<Materialization | null> {
    return this.http.call(Materialization.nullable(), {
      method: 'GET',
      path: `/internal/v1/environments/${encodeURIComponent(environmentId)}/assets/${encodeURIComponent(assetKey)}/latest-usable`,
      tenantId,
    });
  }

  /** One materialization of an environment's asset (to read its file), or undefined when the tenant has none such. */
  async materializationOfAsset(tenantId: string, environmentId: string, assetKey: string, id: string, requestId?: string): Promise<Materialization | undefined> {
    try {
      return await this.http.call(Materialization, {
        method: 'GET',
        path: `/internal/v1/environments/${encodeURIComponent(environmentId)}/assets/${encodeURIComponent(assetKey)}/materializations/${encodeURIComponent(id)}`,
        tenantId,
        requestId,
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
