import { readFileSync } from 'node:fs';
import type { ClientInterceptors } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { z } from 'zod';
import { ApiError } from './api-error.ts';
import { isBackingServerUnavailable } from './unavailable.ts';
import { tracingConfigured, type TracingSettings } from '@envengine/tracing';

/**
 * How a service reaches Temporal: its frontend, namespace and, for a Temporal that is not
 * on the engine's own loopback, mutual TLS. Each TLS setting is the path of a PEM file, as
 * the Temporal CLI takes them; the files are read once, at start-up.
 */
export const temporalConfigShape = {
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  /** Client certificate (PEM file); with TEMPORAL_TLS_KEY. */
  TEMPORAL_TLS_CERT: z.string().min(1).optional(),
  TEMPORAL_TLS_KEY: z.string().min(1).optional(),
  /** The CA that signed the server's certificate (PEM file); the system's CAs when omitted. */
  TEMPORAL_TLS_CA: z.string().min(1).optional(),
  /** The name in the server's certificate, when it differs from TEMPORAL_ADDRESS's host. */
  TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional(),
};

export type TemporalConfig = z.infer<z.ZodObject<typeof temporalConfigShape>>;

/** What `Connection.connect` (client) and `NativeConnection.connect` (worker) take. */
export interface TemporalConnectionOptions {
  address: string;
  tls?: {
    serverNameOverride?: string;
    serverRootCACertificate?: Buffer;
    clientCertPair?: { crt: Buffer; key: Buffer };
  };
}

function readPem(setting: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new Error(`Invalid configuration:\n  ${setting}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/** TLS when any TLS setting is given; a client certificate needs both its files. */
export function temporalConnectionOptions(config: TemporalConfig): TemporalConnectionOptions {
  const { TEMPORAL_TLS_CERT: cert, TEMPORAL_TLS_KEY: key, TEMPORAL_TLS_CA: ca, TEMPORAL_TLS_SERVER_NAME: serverName } = config;
  if (Boolean(cert) !== Boolean(key)) {
    throw new Error('Invalid configuration:\n  TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY: give both (a client certificate and its key) or neither');
  }
  if (!cert && !ca && !serverName) return { address: config.TEMPORAL_ADDRESS };
  return {
    address: config.TEMPORAL_ADDRESS,
    tls: {
      ...(serverName ? { serverNameOverride: serverName } : {}),
      ...(ca ? { serverRootCACertificate: readPem('TEMPORAL_TLS_CA', ca) } : {}),
      ...(cert && key ? { clientCertPair: { crt: readPem('TEMPORAL_TLS_CERT', cert), key: readPem('TEMPORAL_TLS_KEY', key) } } : {}),
    },
  };
}

/**
 * The client connection (gRPC over `@grpc/grpc-js`) with its reconnect backoff capped:
 * grpc-js's default grows to two minutes, so a service whose Temporal was down a while
 * kept answering 503 for up to that long after Temporal was back (seen: a minute of 503s
 * after a 100 s outage).
 */
export function temporalClientConnectionOptions(config: TemporalConfig): TemporalConnectionOptions & { channelArgs: Record<string, number> } {
  return {
    ...temporalConnectionOptions(config),
    channelArgs: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': TEMPORAL_RECONNECT_BACKOFF_MAX_MS },
  };
}

/** The longest wait between two attempts to reconnect to Temporal. */
const TEMPORAL_RECONNECT_BACKOFF_MAX_MS = 2_000;

/** How long a call to Temporal may take before Temporal counts as unreachable. */
const TEMPORAL_CALL_DEADLINE_MS = 5_000;

/**
 * A call to Temporal through a lazy connection, with a deadline: while Temporal is
 * unreachable the gRPC client would otherwise keep retrying, and the caller answers 503
 * `unavailable` instead.
 */
export function callTemporal<T>(connection: { withDeadline<R>(deadline: number, fn: () => Promise<R>): Promise<R> }, work: () => Promise<T>): Promise<T> {
  return connection.withDeadline(Date.now() + TEMPORAL_CALL_DEADLINE_MS, work).catch((error: unknown) => {
    if (isBackingServerUnavailable(error)) {
      throw new ApiError('unavailable', 'Temporal is unreachable; try again shortly.', { headers: { 'Retry-After': '2' } });
    }
    throw error;
  });
}

/**
 * The Temporal client's interceptors: with tracing on, a started workflow continues the
 * caller's trace (its context travels in the workflow's headers); none otherwise.
 */
export function temporalClientInterceptors(tracing: z.infer<typeof TracingSettings>): ClientInterceptors | undefined {
  return tracingConfigured(tracing) ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
}
