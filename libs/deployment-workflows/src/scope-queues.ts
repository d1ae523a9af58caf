import { patched, proxyActivities, workflowInfo, type ActivityInterfaceFor, type ActivityOptions } from '@temporalio/workflow';
import { SCOPE_TASK_QUEUES_PATCH, scopeTaskQueue } from '@envengine/contracts/workflow-inputs';

/**
 * Proxies of the placement scope's own activities, scheduled on its queue, where the
 * placement-service serves them over its own repositories (`onOwnQueue` adds options that
 * only that worker honours, such as a heartbeat timeout). Called once, at the start of a
 * workflow: a history begun before SCOPE_TASK_QUEUES_PATCH keeps the workflows' queue,
 * where the workflow-worker still serves them over the placement-service's internal API.
 */
export function placementScopeActivities<A extends object>(options: ActivityOptions, onOwnQueue: Partial<ActivityOptions> = {}): ActivityInterfaceFor<A> {
  if (!patched(SCOPE_TASK_QUEUES_PATCH)) return proxyActivities<A>(options);
  return proxyActivities<A>({ ...options, ...onOwnQueue, taskQueue: scopeTaskQueue(workflowInfo().taskQueue, 'placement') });
}
