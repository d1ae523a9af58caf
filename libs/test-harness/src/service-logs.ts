import { replicaName, type ServiceName } from '@envengine/dev-stack';
import type { StackInfo } from './test-stack.ts';

/** The log file of every replica of a deployable (`placement-service.log`, `placement-service-2.log`…), in replica order. */
export function replicaLogFiles(stack: Pick<StackInfo, 'replicaUrls'>, service: ServiceName): string[] {
  return stack.replicaUrls[service].map((_, replica) => `${replicaName(service, replica)}.log`);
}
