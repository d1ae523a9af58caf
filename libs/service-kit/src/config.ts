import { z } from 'zod';

/**
 * Parses the process environment once, at start-up. A bad value stops the process with
 * one line per problem instead of failing later at first use.
 */
export function parseConfig<S extends z.ZodType>(
  schema: S,
  env: Record<string, string | undefined>,
): z.infer<S> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues
      .map((issue) => `  ${issue.path.join('.') || '(env)'}: ${issue.message}`)
      .join('\n');
    throw new Error(`Invalid configuration:\n${problems}`);
  }
  return result.data;
}

/** A TCP port from an environment variable. */
export const PortFromEnv = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

/** A positive integer from an environment variable. */
export const PositiveIntFromEnv = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** A shared secret between the gateway and internal services. */
export const InternalCredential = z
  .string({ message: 'is required (the gateway and every service must share it)' })
  .min(32, { message: 'must be at least 32 characters' });

export const LogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info');

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
  });
}
export type InternalServiceConfig = z.infer<ReturnType<typeof internalServiceConfigSchema>>;
