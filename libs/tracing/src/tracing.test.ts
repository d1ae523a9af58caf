import { describe, expect, it } from 'vitest';
import { extractTraceContext, injectTraceContext, inSpan, startTracing, TracingSettings, trace } from './tracing.ts';

describe('tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  const tracing = startTracing('test', TracingSettings.parse({}));

  it('registers nothing: no header goes out, none is continued, spans record nothing', async () => {
    expect(tracing.enabled).toBe(false);
    const incoming = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    expect(trace.getSpan(extractTraceContext(incoming))).toBeUndefined();
    const seen = await inSpan(tracing.tracer, 'work', {}, async (span) => {
      expect(span.isRecording()).toBe(false);
      return injectTraceContext({});
    });
    expect(seen).toEqual({});
    await tracing.shutdown();
  });

  it('refuses an endpoint that is not a URL at start-up', () => {
    expect(TracingSettings.safeParse({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }).success).toBe(false);
    expect(TracingSettings.safeParse({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).success).toBe(true);
  });
});
