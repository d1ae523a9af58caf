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

/**
 * The replicas of one internal service: a URL, or several separated by commas
 * (`http://10.0.0.5:8081,http://10.0.0.6:8081`), which callers balance across.
 */
export const ServiceOriginsFromEnv = (service: string, fallback?: string) =>
  (fallback === undefined ? z.string({ message: `is required (the ${service} URL)` }) : z.string().default(fallback))
    .transform((value) => value.split(',').map((origin) => origin.trim()).filter((origin) => origin !== ''))
    .pipe(
      z
        .array(z.url({ message: `must be ${service} URLs (http://host:port), separated by commas` }).refine((url) => /^https?:\/\//.test(url), { message: 'must be an http(s) URL' }))
        .min(1, { message: `must name at least one ${service} URL` }),
    );

/** A shared secret between the gateway and internal services. */
export const InternalCredential = z
  .string({ message: 'is required (the gateway and every service must share it)' })
  .min(32, { message: 'must be at least 32 characters' });

export const LogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info');

/**
 * A `mongodb://` connection string in its parts. Not through `URL`: a replica set's
 * `host1,host2` is no URL host. The user info runs to the last `@` before the first `/`
 * (a password's own `@` and `/` are percent-encoded), so a `,` in a password stays in it.
 */
export function mongoUrlParts(url: string): { scheme: string; userInfo: string | undefined; rest: string } | undefined {
  const match = /^(mongodb(?:\+srv)?:\/\/)(?:([^/]*)@)?([^@]*)$/.exec(url);
  if (!match) return undefined;
  return { scheme: match[1]!, userInfo: match[2], rest: match[3]! };
}

/** A connection string fit to show: its user and password removed. */
export function withoutCredential(url: string): string {
  const mongo = mongoUrlParts(url);
  if (mongo) return `${mongo.scheme}${mongo.rest}`;
  // A Redis Cluster's nodes: a list of URLs, split before each scheme (a password may hold a comma).
  const list = url.split(/,(?=\s*rediss?:\/\/)/);
  if (list.length > 1) return list.map((part) => withoutCredential(part.trim())).join(',');
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return url;
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(a connection string that does not parse)';
  }
}
