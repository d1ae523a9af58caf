import { describe, expect, it } from 'vitest';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { UNAVAILABLE_FAILURE_TYPE } from '@envengine/deployment-workflows';
import { ApiError } from '@envengine/service-kit';
import { workflowFailure } from './workflow-starter.ts';

/** A workflow that failed on a step whose last failure was `cause`, as the client reports it. */
function failedOn(cause: ApplicationFailure): WorkflowFailedError {
  const activity = new ActivityFailure('activity failed', 'validateAndRecord', 'validateAndRecord', undefined as never, undefined, cause);
  return new WorkflowFailedError('Workflow execution failed', activity, undefined as never);
}

// Found by the soak (docs/reliability.md): a secrets-service paused past the ingest's retries answered 500.
describe('what the caller of a failed workflow is told', () => {
  it('503 unavailable, naming the service, when a service it needed stayed unreachable', () => {
    const answer = workflowFailure(failedOn(ApplicationFailure.retryable('The secrets-service is unreachable; try again shortly.', UNAVAILABLE_FAILURE_TYPE)), 'dep_1');
    expect(answer).toBeInstanceOf(ApiError);
    expect(answer).toMatchObject({ code: 'unavailable', message: 'The secrets-service is unreachable, so dep_1 did not finish; try again shortly.' });
  });

  it('an internal error naming the cause for any other failure', () => {
    const answer = workflowFailure(failedOn(ApplicationFailure.nonRetryable('no manifest stored for dep_1', 'NotFound')), 'dep_1');
    expect(answer).not.toBeInstanceOf(ApiError);
    expect(answer.message).toBe('workflow for dep_1 failed: activity failed');
  });
});
