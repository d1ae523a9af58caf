import { RecordMaterializationRequest, type Materialization } from '@envengine/contracts';
import type { z } from 'zod';
import { DeploymentClient } from '@envengine/service-clients';
import type { StackInfo } from './test-stack.ts';

/** Records a materialization as an attempt does after `ctx.emit`, through the deployment-service's internal API (fixtures without running code). */
export async function recordMaterialization(stack: StackInfo, tenantId: string, input: z.input<typeof RecordMaterializationRequest>): Promise<Materialization> {
  const request = RecordMaterializationRequest.parse(input);
  const client = new DeploymentClient({ origins: [stack.urls['deployment-service']], credential: stack.internalCredential });
  try {
    return await client.recordMaterialization(tenantId, request);
  } finally {
    await client.close();
  }
}
