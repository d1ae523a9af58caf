import { z } from 'zod';
import { MasterKeyring } from '@envengine/sealed-values';
import { DEFAULT_TASK_QUEUE } from '@envengine/contracts';
import { internalServiceConfigSchema, InternalCredential, parseConfig, ServiceOriginsFromEnv, temporalConfigShape } from '@envengine/service-kit';

const secretsConfigSchema = internalServiceConfigSchema({ port: 8083, mongoDb: 'envengine_secrets' })
  .extend({
    PLACEMENT_SERVICE_URL: ServiceOriginsFromEnv('placement-service'),
    // Temporal: this scope's tear-down step is served on its own task queue, `<DEPLOYMENTS_TASK_QUEUE>-secrets`.
    ...temporalConfigShape,
    DEPLOYMENTS_TASK_QUEUE: z.string().min(1).default(DEFAULT_TASK_QUEUE),
    /** Held only by the attempt runner and workers: opens `/internal/v1` (secret resolution). */
    RESOLVER_CREDENTIAL: InternalCredential,
    /** base64 of 32 bytes; wraps every new data key of the `local` backend. */
    SECRETS_MASTER_KEY: z.string({ message: 'is required (base64 of 32 random bytes)' }).min(1),
    /** Comma-separated keys that still unwrap older data keys during a rotation. */
    SECRETS_PREVIOUS_MASTER_KEYS: z.string().default(''),
  })
  .transform((config, ctx) => {
    try {
      const keyring = MasterKeyring.fromText(config.SECRETS_MASTER_KEY, config.SECRETS_PREVIOUS_MASTER_KEYS);
      // The key text is not kept: only the parsed keyring leaves this function.
      const { SECRETS_MASTER_KEY: _active, SECRETS_PREVIOUS_MASTER_KEYS: _previous, ...rest } = config;
      return { ...rest, keyring };
    } catch (error) {
      ctx.addIssue({ code: 'custom', path: ['SECRETS_MASTER_KEY'], message: (error as Error).message });
      return z.NEVER;
    }
  });

export type SecretsConfig = z.infer<typeof secretsConfigSchema>;

export function loadSecretsConfig(env: Record<string, string | undefined>): SecretsConfig {
  return parseConfig(secretsConfigSchema, env);
}
