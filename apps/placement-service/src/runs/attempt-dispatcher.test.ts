import type { AttemptQueueProducer } from '@envengine/attempt-queues';
import type { Logger } from '@envengine/service-kit';
import { context, inSpan, startTracing, trace, TracingSettings } from '@envengine/tracing';
import { afterAll, describe, expect, it } from 'vitest';
import { AttemptDispatcher } from './attempt-dispatcher.ts';
import { newAttempt } from './attempt-records.ts';
import type { RunRepository } from './run.repository.ts';
import type { AttemptDocument } from './run.schema.ts';

// A registered provider and propagator; the exporter's endpoint is never reached (nothing is flushed before shutdown).
const tracing = startTracing('placement-service-test', TracingSettings.parse({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }));
afterAll(() => tracing.shutdown().catch(() => undefined));

/** The queue add's side, as the dispatcher sees it: which trace each add was made in. */
function recordingQueues(): { queues: AttemptQueueProducer; traces: string[] } {
  const traces: string[] = [];
  const queues = {
    enqueue: async () => {
      traces.push(trace.getSpanContext(context.active())?.traceId ?? 'none');
      return 'job';
    },
  } as unknown as AttemptQueueProducer;
  return { queues, traces };
}

const runs = { markEnqueued: async () => undefined } as unknown as RunRepository;
const log = { warn: () => undefined } as unknown as Logger;

describe('an attempt keeps the trace it was made in', () => {
  it('is added to its queue in its own request\'s trace, even by a sweep in another trace', async () => {
    const made = await inSpan(tracing.tracer, 'POST /runs', {}, async (span) => ({
      traceId: span.spanContext().traceId,
      attempt: { ...newAttempt('run_1', 'env_1', 1, 'remote', ['orders'], new Date()), tenant_id: 'ten_1' } as AttemptDocument,
    }));
    expect(made.attempt.trace_parent).toContain(made.traceId);

    const { queues, traces } = recordingQueues();
    const dispatcher = new AttemptDispatcher(runs, queues, log);
    const sweepTrace = await inSpan(tracing.tracer, 'reconcile', {}, async (span) => {
      await dispatcher.dispatch(made.attempt);
      return span.spanContext().traceId;
    });
    expect(sweepTrace).not.toBe(made.traceId);
    expect(traces).toEqual([made.traceId]);
  });

  it('is added in the caller\'s trace when it was made untraced', async () => {
    const attempt = { ...newAttempt('run_2', 'env_1', 1, 'remote', ['orders'], new Date()), tenant_id: 'ten_1' } as AttemptDocument;
    expect(attempt.trace_parent).toBeNull();
    const { queues, traces } = recordingQueues();
    const dispatcher = new AttemptDispatcher(runs, queues, log);
    const callerTrace = await inSpan(tracing.tracer, 'reconcile', {}, async (span) => {
      await dispatcher.dispatch(attempt);
      return span.spanContext().traceId;
    });
    expect(traces).toEqual([callerTrace]);
  });
});
