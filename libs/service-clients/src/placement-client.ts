import { Environment, type SetActiveDeploymentRequest } from '@envengine/contracts';
import { ApiError } from '@envengine/service-kit';
import { InternalHttpClient, type InternalHttpClientOptions } from './internal-http-client.ts';

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

  close(): Promise<void> {
    return this.http.close();
  }
}
