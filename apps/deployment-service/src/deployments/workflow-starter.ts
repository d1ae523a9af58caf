import { ApplicationFailure, Client, Connection, WorkflowExecutionAlreadyStartedError, WorkflowFailedError, type ClientInterceptors } from '@temporalio/client';
import { ActivateInput, IngestInput, type Recheck } from '@envengine/contracts';
import {
  ACTIVATE_WORKFLOW,
  activateWorkflowId,
  INGEST_WORKFLOW,
  ingestWorkflowId,
  searchAttributesOf,
  UNAVAILABLE_FAILURE_TYPE,
  type DeploymentMemo,
  type IngestOutcome,
} from '@envengine/deployment-workflows';
import { ApiError, callTemporal, type TemporalConnectionOptions } from '@envengine/service-kit';

/**
 * What a failed workflow's caller is told: 503 `unavailable` when a service it needed stayed
 * unreachable past its steps' retries (the caller's to try again), else an internal error
 * naming the cause.
 */
export function workflowFailure(error: WorkflowFailedError, deploymentId: string): Error {
  const root = rootCauseOf(error);
  if (root instanceof ApplicationFailure && root.type === UNAVAILABLE_FAILURE_TYPE) {
    return new ApiError('unavailable', `${root.message.replace(/;? ?try again shortly\.?$/, '')}, so ${deploymentId} did not finish; try again shortly.`, { headers: { 'Retry-After': '5' } });
  }
  return new Error(`workflow for ${deploymentId} failed: ${error.cause?.message ?? error.message}`);
}

function rootCauseOf(error: Error): Error {
  let cause: Error = error;
  while (cause.cause instanceof Error) cause = cause.cause;
  return cause;
}

/** The workflow goes on after the request's wait is over: the caller is told so. */
export class StillRunningError extends Error {
  constructor(readonly deploymentId: string) {
    super(`the workflow for ${deploymentId} is still running`);
  }
}

/**
 * Starts the ingest and activation workflows and waits for their results. The connection
 * is lazy: the service starts without Temporal, answers 503 while it is unreachable, and
 * works again when it returns.
 */
export class WorkflowStarter {
  private readonly connection: Connection;
  private readonly client: Client;

  constructor(
    private readonly options: { connection: TemporalConnectionOptions; namespace: string; taskQueue: string; waitMs: number; interceptors?: ClientInterceptors },
  ) {
    this.connection = Connection.lazy(options.connection);
    this.client = new Client({ connection: this.connection, namespace: options.namespace, interceptors: options.interceptors });
  }

  /** Calls Temporal with a deadline: `unavailable` (503) while it is unreachable. */
  private call<T>(start: () => Promise<T>): Promise<T> {
    return callTemporal(this.connection, start);
  }

  /**
   * Starts the ingest (`unavailable` if Temporal cannot be reached), then waits for it
   * until `waitMs` after `arrivedAt`, when the request arrived: the whole answer, start
   * included, stays within the wait, and so within the gateway's timeout.
   */
  async ingest(input: IngestInput, arrivedAt: number): Promise<IngestOutcome> {
    const handle = await this.call(() =>
      this.client.workflow.start(INGEST_WORKFLOW, {
        workflowId: ingestWorkflowId(input.deploymentId),
        taskQueue: this.options.taskQueue,
        args: [IngestInput.parse(input)],
        memo: { ...memoOf(input) },
        typedSearchAttributes: searchAttributesOf(input),
      }),
    );
    return this.wait(handle.result() as Promise<IngestOutcome>, input.deploymentId, arrivedAt);
  }

  async activate(input: ActivateInput, arrivedAt: number): Promise<Recheck> {
    const workflowId = activateWorkflowId(input.deploymentId);
    try {
      const handle = await this.call(() =>
        this.client.workflow.start(ACTIVATE_WORKFLOW, {
          workflowId,
          taskQueue: this.options.taskQueue,
          args: [ActivateInput.parse(input)],
          memo: { ...memoOf(input) },
          typedSearchAttributes: searchAttributesOf(input),
        }),
      );
      return await this.wait(handle.result() as Promise<Recheck>, input.deploymentId, arrivedAt);
    } catch (error) {
      // The same deployment is being activated already: its answer is this one's too.
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      return this.wait(this.client.workflow.getHandle(workflowId).result() as Promise<Recheck>, input.deploymentId, arrivedAt);
    }
  }

  private async wait<T>(result: Promise<T>, deploymentId: string, arrivedAt: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StillRunningError(deploymentId)), Math.max(0, arrivedAt + this.options.waitMs - Date.now()));
    });
    try {
      return await Promise.race([result, timeout]);
    } catch (error) {
      if (error instanceof WorkflowFailedError) throw workflowFailure(error, deploymentId);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}

function memoOf(input: { tenantId: string; environmentName: string; environmentId: string; deploymentId: string }): DeploymentMemo {
  return { tenant_id: input.tenantId, environment: input.environmentName, environment_id: input.environmentId, deployment_id: input.deploymentId };
}
