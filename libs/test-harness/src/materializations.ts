import type { Materialization, RecordMaterializationRequest } from '@envengine/contracts';
import { DeploymentClient } from '@envengine/service-clients';
import type { StackInfo } from './test-stack.ts';

/** Records a materialization as a run will after `ctx.emit`, through the deployment-service's internal API. */
export async function recordMaterialization(stack: StackInfo, tenantId: string, request: RecordMaterializationRequest): Promise<Materialization> {
  const client = new DeploymentClient({ origin: stack.urls['deployment-service'], credential: stack.internalCredential });
  try {
    return await client.recordMaterialization(tenantId, request);
  } finally {
    await client.close();
  }
}
