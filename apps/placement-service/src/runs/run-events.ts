import type { EventType } from '@envengine/contracts';
import type { EventCause, NewEvent } from '@envengine/event-log';
import type { AttemptDocument, RunDocument } from './run.schema.ts';

/** A run's events: the environment it belongs to, and the run as subject. */
export function aboutRun(run: Pick<RunDocument, '_id' | 'environment_id' | 'environment_name'>): Pick<NewEvent<EventType>, 'environment' | 'subject'> {
  return { environment: { id: run.environment_id, name: run.environment_name }, subject: { kind: 'run', id: run._id } };
}

export function runQueued(run: Pick<RunDocument, '_id' | 'environment_id' | 'environment_name' | 'trigger' | 'job' | 'deployment_id' | 'waiting_for_slot'>, cause: EventCause): NewEvent<'run.queued'> {
  return {
    type: 'run.queued',
    ...aboutRun(run),
    cause,
    data: { trigger: run.trigger, job: run.job, deployment_id: run.deployment_id, waiting_for_slot: run.waiting_for_slot },
  };
}

/** An attempt's events: its run's environment, the attempt as subject. */
export function aboutAttempt(attempt: Pick<AttemptDocument, '_id'>, run: Pick<RunDocument, 'environment_id' | 'environment_name'>): Pick<NewEvent<EventType>, 'environment' | 'subject'> {
  return { environment: { id: run.environment_id, name: run.environment_name }, subject: { kind: 'attempt', id: attempt._id } };
}
