import { z } from 'zod';
import { GitInfo, Materialization, Recheck, type RecordDeploymentRequest, type RecordMaterializationRequest } from '@envengine/contracts';
import { InternalHttpClient, type InternalHttpClientOptions } from './internal-http-client.ts';

/** The deployment-service's internal API, as the workflow-worker's activities (and later runs) use it. */
export class DeploymentClient {
  private readonly http: InternalHttpClient;

  constructor(options: Omit<InternalHttpClientOptions, 'service'>) {
    this.http = new InternalHttpClient({ ...options, service: 'deployment-service' });
  }

  async bundleEntries(tenantId: string, bundleRef: string): Promise<string[] | null> {
    const { entries } = await this.http.call(z.object({ entries: z.array(z.string()).nullable() }), {
      method: 'GET',
      path: `/internal/v1/bundles/${encodeURIComponent(bundleRef)}/entries`,
      tenantId,
    });
    return entries;
  }

  async recordDeployment(tenantId: string, record: RecordDeploymentRequest): Promise<void> {
    await this.http.call(z.object({ id: z.string() }), { method: 'POST', path: '/internal/v1/deployments', tenantId, body: record });
  }

  deployment(tenantId: string, id: string) {
    return this.http.call(z.object({ id: z.string(), status: z.string(), git: GitInfo, environment_id: z.string() }), {
      method: 'GET',
      path: `/internal/v1/deployments/${encodeURIComponent(id)}`,
      tenantId,
    });
  }

  async manifest(tenantId: string, id: string): Promise<unknown> {
    const { manifest } = await this.http.call(z.object({ manifest: z.unknown() }), {
      method: 'GET',
      path: `/internal/v1/deployments/${encodeURIComponent(id)}/manifest`,
      tenantId,
    });
    return manifest;
  }

  recheck(tenantId: string, id: string): Promise<Recheck> {
    return this.http.call(Recheck, { method: 'POST', path: `/internal/v1/deployments/${encodeURIComponent(id)}/recheck`, tenantId, body: {} });
  }

  async acquireActivationLock(tenantId: string, environmentId: string, holder: string): Promise<void> {
    await this.http.call(z.unknown(), { method: 'POST', path: `/internal/v1/activation-locks/${encodeURIComponent(environmentId)}`, tenantId, body: { holder } });
  }

  async releaseActivationLock(tenantId: string, environmentId: string, holder: string): Promise<void> {
    await this.http.call(z.unknown(), { method: 'DELETE', path: `/internal/v1/activation-locks/${encodeURIComponent(environmentId)}`, tenantId, body: { holder } });
  }

  recordMaterialization(tenantId: string, request: RecordMaterializationRequest): Promise<Materialization> {
    return this.http.call(Materialization, { method: 'POST', path: '/internal/v1/materializations', tenantId, body: request });
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
