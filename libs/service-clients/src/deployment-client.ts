import { Materialization, type RecordMaterializationRequest } from '@envengine/contracts';
import { InternalHttpClient, type InternalHttpClientOptions } from './internal-http-client.ts';

/**
 * The deployment-service's internal API. The scope's own workflow-worker never uses it (it
 * shares the scope's data-access lib); what is left here is for other scopes: recording
 * a materialization, as a run does after `ctx.emit`.
 */
export class DeploymentClient {
  private readonly http: InternalHttpClient;

  constructor(options: Omit<InternalHttpClientOptions, 'service'>) {
    this.http = new InternalHttpClient({ ...options, service: 'deployment-service' });
  }

  recordMaterialization(tenantId: string, request: RecordMaterializationRequest): Promise<Materialization> {
    return this.http.call(Materialization, { method: 'POST', path: '/internal/v1/materializations', tenantId, body: request });
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
