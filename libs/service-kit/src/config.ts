import { z } from 'zod';
import { InternalCredential, LogLevel, PortFromEnv, PositiveIntFromEnv } from '@envengine/process-kit';
import { TracingSettings } from '@envengine/tracing';

/** Settings every internal HTTP service shares; each service names its port and database. */
export function internalServiceConfigSchema(defaults: { port: number; mongoDb: string }) {
  return z.object({
    HOST: z.string().default('127.0.0.1'),
    PORT: PortFromEnv(defaults.port),
    MONGO_URL: z.string({ message: 'is required' }).min(1),
    MONGO_DB: z.string().default(defaults.mongoDb),
    INTERNAL_CREDENTIAL: InternalCredential,
    /** Largest JSON request body, in bytes. */
    JSON_BODY_LIMIT_BYTES: PositiveIntFromEnv(1024 * 1024),
    LOG_LEVEL: LogLevel,
    ...TracingSettings.shape,
  });
}
export type InternalServiceConfig = z.infer<ReturnType<typeof internalServiceConfigSchema>>;
