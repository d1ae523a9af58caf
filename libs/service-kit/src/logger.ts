import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs on stdout. Headers that carry credentials are redacted, and no
 * request or response body is ever logged, so secret values cannot reach a log line.
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
    redact: {
      paths: ['authorization', 'headers.authorization', '*.authorization', '*["x-envengine-internal-credential"]'],
      censor: '[redacted]',
    },
  }, destination);
}
