import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs on stdout. Headers that carry credentials are redacted, and no
 * request or response body is ever logged, so secret values cannot reach a log line.
 */
export function createLogger(service: string, level: string): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: {
      paths: ['authorization', 'headers.authorization', '*.authorization', '*["x-envengine-internal-credential"]'],
      censor: '[redacted]',
    },
  });
}
