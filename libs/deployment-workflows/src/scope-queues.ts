import { patched, proxyActivities, workflowInfo, type ActivityInterfaceFor, type ActivityOptions } from '@temporalio/workflow';
import { SCOPE_HEARTBEAT_TIMEOUT, SCOPE_TASK_QUEUES_PATCH, scopeTaskQueue, type ScopeWithActivities } from '@envengine/contracts/workflow-inputs';

/**
 * Proxies of one scope's own activities, scheduled on its queue, where the service that owns
 * their data serves them over its own repositories, each heartbeating while it runs (so a
 * step of a service that died is tried again after SCOPE_HEARTBEAT_TIMEOUT). Called at the
 * start of a workflow: a history begun before SCOPE_TASK_QUEUES_PATCH keeps the workflows'
 * queue, where the workflow-worker still serves them over the owner's internal API (and
 * sends no heartbeat).
 */
export function scopeActivities<A extends object>(scope: ScopeWithActivities, options: ActivityOptions): ActivityInterfaceFor<A> {
  if (!patched(SCOPE_TASK_QUEUES_PATCH)) return proxyActivities<A>(options);
  return proxyActivities<A>({ ...options, heartbeatTimeout: SCOPE_HEARTBEAT_TIMEOUT, taskQueue: scopeTaskQueue(workflowInfo().taskQueue, scope) });
}
