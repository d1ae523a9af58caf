import type { ManagedProcess } from '@envengine/backing-servers';
import { until, workflowProgress, type TestTenant } from '@envengine/test-harness';
import { expect } from 'vitest';

/**
 * Waits for each ingest that was in flight (its workflow id `ingest-<deployment id>`) to
 * record its deployment `ready`, up to 90 s each; on failure the message says where the
 * workflow stopped and whether the workflow-worker still runs.
 */
export async function expectIngestsCompleted(tenant: TestTenant, temporalAddress: string, workflowIds: readonly string[], worker: ManagedProcess): Promise<void> {
  for (const workflowId of workflowIds) {
    const id = workflowId.replace(/^ingest-/, '');
    const recorded = await until(() => tenant.api.get(`/deployments/${id}`), (response) => response.body?.data?.status === 'ready', 90_000);
    const progress = recorded.body?.data?.status === 'ready' ? '' : await workflowProgress(temporalAddress, workflowId);
    expect(recorded.body.data, `${progress}; workflow-worker ${worker.running ? 'running' : 'exited'}`).toMatchObject({ id, status: 'ready' });
  }
}
