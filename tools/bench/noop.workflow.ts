// The baseline of the deployments suite: workflows shaped like ingest and activation
// (the same activities and child workflow) whose activities do nothing.
import { executeChild, proxyActivities } from '@temporalio/workflow';

export interface NoopActivities {
  noop(step: string): Promise<void>;
}

const { noop } = proxyActivities<NoopActivities>({ startToCloseTimeout: '10 seconds' });

/** Like activateDeployment: lock, re-check, move the pointer, unlock. */
export async function noopActivate(): Promise<void> {
  for (const step of ['acquire', 'recheck', 'move', 'release']) await noop(step);
}

/** Like ingestDeployment with activate: gather, record, then the activation as a child. */
export async function noopIngest(id: string): Promise<void> {
  await noop('load');
  await noop('record');
  await executeChild(noopActivate, { workflowId: `noop-activate-${id}` });
}
