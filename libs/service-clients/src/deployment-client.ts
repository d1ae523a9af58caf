import {
  InternalApi,
  type DeploymentQuotas,
  type DeploymentRunSpec,
  type Materialization,
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
    return this.http.request(InternalApi.recordMaterialization, { tenantId, body: request });
  }

  /** Takes back a materialization `attemptId` recorded (its lease was superseded before the outcome was written). */
  async retractMaterialization(tenantId: string, id: string, attemptId: string): Promise<boolean> {
    const answer = await this.http.request(InternalApi.retractMaterialization, { tenantId, params: { id }, body: { attempt_id: attemptId } });
    return answer.retracted;
  }

  /** Internal: the tenant's stored-bundle quota, its limit and use (a part of `GET /quotas`). */
  quotas(tenantId: string, requestId?: string): Promise<DeploymentQuotas> {
    return this.http.request(InternalApi.deploymentQuotas, { tenantId, requestId });
  }

  /** The deployment with its manifest, or undefined when the tenant has no such deployment. */
  async runSpec(tenantId: string, deploymentId: string, requestId?: string): Promise<DeploymentRunSpec | undefined> {
    try {
      return await this.http.request(InternalApi.deploymentRunSpec, { tenantId, requestId, params: { id: deploymentId } });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  /** `ctx.read(key)`: the asset's newest materialization that is not quarantined, or null. */
  latestUsableMaterialization(tenantId: string, environmentId: string, assetKey: string): Promise<Materialization | null> {
    return this.http.request(InternalApi.latestUsableMaterialization, { tenantId, params: { environmentId, key: assetKey } });
  }

  /** One materialization of an environment's asset (to read its file), or undefined when the tenant has none such. */
  async materializationOfAsset(tenantId: string, environmentId: string, assetKey: string, id: string, requestId?: string): Promise<Materialization | undefined> {
    try {
      return await this.http.request(InternalApi.materializationOfAsset, { tenantId, requestId, params: { environmentId, key: assetKey, id } });
    } catch (error) {
      if (error instanceof ApiError && error.code === 'not_found') return undefined;
      throw error;
    }
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
