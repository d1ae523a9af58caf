import { ApplicationFailure } from '@temporalio/workflow';
import type { z } from 'zod';

/**
 * A workflow's input, checked against its schema. A bad input fails the workflow at once
 * (non-retryable), rather than its workflow task, which Temporal would retry forever.
 */
export function workflowInput<S extends z.ZodType>(schema: S, raw: unknown, workflow: string): z.infer<S> {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const where = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(input)'}: ${issue.message}`).join('; ');
    throw ApplicationFailure.nonRetryable(`${workflow} was started with a bad input: ${where}`, 'BadWorkflowInput');
  }
  return parsed.data;
}
