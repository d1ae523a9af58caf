import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { z } from 'zod';

/** The one setting of tracing: where spans go (OTLP over HTTP). Unset, nothing is traced. */
export const TracingSettings = z.object({
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/, message: 'must be the OTLP/HTTP endpoint, e.g. http://collector:4318' }).optional(),
});

export interface Tracing {
  readonly enabled: boolean;
  /** The process's tracer (a no-op one when tracing is off). */
  readonly tracer: Tracer;
  /** Where spans made outside the global provider (Temporal's workflow sandbox) are sent. */
  readonly spanProcessor: SpanProcessor | undefined;
  readonly resource: Resource | undefined;
  /** Sends what is pending; called once at stop. */
  shutdown(): Promise<void>;
}

/** The one tracer (and BullMQ telemetry) name of every process. */
export const TRACER_NAME = 'envengine';

/** Whether the process traces: the one test of the setting, for what is made before `startTracing`. */
export function tracingConfigured(settings: z.infer<typeof TracingSettings>): boolean {
  return settings.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined;
}

/**
 * Starts tracing for one process when OTEL_EXPORTER_OTLP_ENDPOINT is set: a tracer
 * provider with the W3C trace-context propagator and an async-local context, spans
 * batched to `<endpoint>/v1/traces` (OTLP/HTTP, JSON). When it is not set nothing is
 * registered: the OpenTelemetry API stays a no-op, nothing is propagated, and the
 * processes mount no tracing middleware at all.
 */
export function startTracing(service: string, settings: z.infer<typeof TracingSettings>): Tracing {
  const endpoint = settings.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!tracingConfigured(settings) || !endpoint) {
    return { enabled: false, tracer: trace.getTracer(TRACER_NAME), spanProcessor: undefined, resource: undefined, shutdown: async () => {} };
  }
  const resource = new Resource({ 'service.name': service });
  const exporter = new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` });
  const spanProcessor = new BatchSpanProcessor(exporter);
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  // W3C trace context only: the SDK's default also carries `baggage`, which would take a
  // client's header (untrusted, up to kilobytes) into every internal call, job and workflow.
  provider.register({ propagator: new W3CTraceContextPropagator() });
  return {
    enabled: true,
    tracer: provider.getTracer(TRACER_NAME),
    spanProcessor,
    resource,
    shutdown: () => provider.shutdown(),
  };
}

/** Adds the active trace context (`traceparent`) to outgoing headers; nothing when tracing is off. */
export function injectTraceContext(headers: Record<string, string>): Record<string, string> {
  propagation.inject(context.active(), headers);
  return headers;
}

/** The context a request's `traceparent` header continues (the root context when it has none). */
export function extractTraceContext(carrier: Record<string, unknown>): Context {
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/**
 * Runs `work` inside a new span (a child of the active one), ending it when the work
 * settles; a thrown error marks the span failed and is rethrown.
 */
export async function inSpan<T>(
  tracer: Tracer,
  name: string,
  attributes: Record<string, string | number | boolean>,
  work: (span: Span) => Promise<T>,
  kind: SpanKind = SpanKind.INTERNAL,
): Promise<T> {
  return tracer.startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}

export { SpanKind, SpanStatusCode, context, trace, type Context, type Span, type Tracer };
