import { context, trace } from '@opentelemetry/api';
import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs on stdout. No log call passes headers or a request or response
 * body, so neither credentials nor secret values can reach a log line (the integration
 * suite scans every service log to prove it); no per-line redaction pass is needed.
 */
export function createLogger(service: string, level: string): Logger {
  // Asynchronous writes keep a log line off the request's critical path; `stopOnSignals`
  // flushes what is pending before the process exits.
  const destination = pino.destination({ dest: 1, sync: false });
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin: activeTraceIds,
  }, destination);
}

/**
 * The trace and span ids of the active span, on every log line written inside one. With
 * tracing off no context is ever active and this is an empty object.
 */
export function activeTraceIds(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const spanContext = span.spanContext();
  if (!trace.isSpanContextValid(spanContext)) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}
