import { WorkflowFailedError, WorkflowNotFoundError, type Client, type Connection } from '@temporalio/client';
import {
  ENVIRONMENT_EXPIRY_WORKFLOW,
  ENVIRONMENT_TEARDOWN_WORKFLOW,
  EnvironmentExpiryInput,
  EnvironmentTeardownInput,
  EXPIRY_MOVED_SIGNAL,
  environmentExpiryWorkflowId,
  environmentTeardownWorkflowId,
  type Environment,
} from '@envengine/contracts';
import type { TeardownTarget } from '../environments/environment.repository.ts';
import { ApiError, callTemporal, isBackingServerUnavailable } from '@envengine/service-kit';

/** The tear-down goes on after the request's wait is over. */
export class TeardownStillRunningError extends Error {}

/**
 * Starts and signals the environment lifecycle's workflows (the workflow-worker runs
 * them): the tear-down, one per environment, which a second delete joins; and a preview's
 * expiry timer, which each deploy moves.
 */
export class LifecycleWorkflows {
  constructor(
    private readonly client: Client,
    private readonly connection: Connection,
    private readonly taskQueue: string,
  ) {}

  /**
   * Starts the environment's tear-down, or joins the one under way (a finished one is
   * started again: every step is idempotent), and waits up to `waitMs` for it to finish.
   */
  async tearDown({ tenantId, environment, purgeData, expired }: TeardownTarget, waitMs: number): Promise<void> {
    const input = EnvironmentTeardownInput.parse({ tenantId, environmentId: environment.id, environmentName: environment.name, purgeData, expired });
    const handle = await this.call(() =>
      this.client.workflow.start(ENVIRONMENT_TEARDOWN_WORKFLOW, {
        workflowId: environmentTeardownWorkflowId(environment.id),
        taskQueue: this.taskQueue,
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        memo: { tenant_id: tenantId, environment: environment.name, environment_id: environment.id },
      }),
    );
    if (waitMs <= 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TeardownStillRunningError()), waitMs);
    });
    try {
      await Promise.race([handle.result(), timeout]);
    } catch (error) {
      if (isBackingServerUnavailable(error)) {
        throw new ApiError('unavailable', 'Temporal is unreachable; the tear-down goes on when it returns, and deleting again waits for it.', { headers: { 'Retry-After': '2' } });
      }
      if (error instanceof WorkflowFailedError) {
        throw new ApiError('unavailable', `The tear-down of "${environment.name}" failed (${error.cause?.message ?? error.message}); deleting again resumes it.`, {
          headers: { 'Retry-After': '5' },
        });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Moves the preview's expiry timer to the environment's `expires_at` (starting it when
   * it is not running); with no expiry, the running timer, if any, is told to stop.
   */
  async moveExpiry(tenantId: string, environment: Environment): Promise<void> {
    const workflowId = environmentExpiryWorkflowId(environment.id);
    if (environment.expires_at === null) {
      await this.call(() => this.client.workflow.getHandle(workflowId).signal(EXPIRY_MOVED_SIGNAL, null)).catch((error: unknown) => {
        if (!(error instanceof WorkflowNotFoundError)) throw error;
      });
      return;
    }
    const input = EnvironmentExpiryInput.parse({
      tenantId,
      environmentId: environment.id,
      environmentName: environment.name,
      expiresAt: environment.expires_at,
    });
    await this.call(() =>
      this.client.workflow.signalWithStart(ENVIRONMENT_EXPIRY_WORKFLOW, {
        workflowId,
        taskQueue: this.taskQueue,
        args: [input],
        signal: EXPIRY_MOVED_SIGNAL,
        signalArgs: [environment.expires_at],
        memo: { tenant_id: tenantId, environment: environment.name, environment_id: environment.id },
      }),
    );
  }

  private call<T>(work: () => Promise<T>): Promise<T> {
    return callTemporal(this.connection, work);
  }
}
