import { z } from 'zod';
import type { ErrorCode } from './errors.ts';

/**
 * The per-tenant quotas (docs/design.md#quotas-and-fair-shares), each checked where its work
 * is admitted, by the scope that owns that work: queued runs and environments by the
 * placement scope, stored bundle bytes and the stored bytes of materializations (checked when
 * an emit is recorded) by the deployment scope, secrets by the secrets scope.
 */
export const QUOTA_NAMES = [
  'queued_runs',
  'queued_runs_per_environment',
  'environments',
  'bundle_bytes',
  'materialization_bytes',
  'secrets_per_environment',
  'webhooks',
  'pool_credentials',
  'previews',
] as const;
export const QuotaName = z.enum(QUOTA_NAMES);
export type QuotaName = z.infer<typeof QuotaName>;

/**
 * Per quota: the scope that checks it (and keeps its per-tenant limit in its own
 * database), the `error.code` of its refusal (429), and that refusal's `Retry-After` in
 * seconds: queued runs free up as runs start; the others only when the tenant removes
 * something, so a client should not retry soon.
 */
export const QUOTA_RULES = {
  queued_runs: { scope: 'placement', errorCode: 'queued_runs_quota_exceeded', retryAfterSeconds: 10 },
  queued_runs_per_environment: { scope: 'placement', errorCode: 'queued_runs_per_environment_quota_exceeded', retryAfterSeconds: 10 },
  environments: { scope: 'placement', errorCode: 'environments_quota_exceeded', retryAfterSeconds: 3600 },
  bundle_bytes: { scope: 'deployment', errorCode: 'bundle_bytes_quota_exceeded', retryAfterSeconds: 3600 },
  materialization_bytes: { scope: 'deployment', errorCode: 'materialization_bytes_quota_exceeded', retryAfterSeconds: 3600 },
  secrets_per_environment: { scope: 'secrets', errorCode: 'secrets_per_environment_quota_exceeded', retryAfterSeconds: 3600 },
  webhooks: { scope: 'placement', errorCode: 'webhooks_quota_exceeded', retryAfterSeconds: 3600 },
  pool_credentials: { scope: 'placement', errorCode: 'pool_credentials_quota_exceeded', retryAfterSeconds: 3600 },
  previews: { scope: 'placement', errorCode: 'previews_quota_exceeded', retryAfterSeconds: 3600 },
} as const satisfies Record<QuotaName, { scope: 'placement' | 'deployment' | 'secrets'; errorCode: ErrorCode; retryAfterSeconds: number }>;

export type QuotaLimits = Record<QuotaName, number>;

/**
 * Every tenant's limits unless the operator set its own (`npm run admin -- quota set`):
 * generous, so that no ordinary use meets them; they bound what one tenant can make the
 * shared servers hold.
 */
export const DEFAULT_QUOTA_LIMITS: QuotaLimits = {
  queued_runs: 2000,
  queued_runs_per_environment: 1000,
  environments: 200,
  bundle_bytes: 20 * 1024 ** 3,
  // The stored bytes of the tenant's materializations (their records' `bytes`): what its emits hold on the object store or the engine host's disk.
  materialization_bytes: 100 * 1024 ** 3,
  secrets_per_environment: 1000,
  // Each event is sent to every webhook that wants it: this bounds one tenant's fan-out.
  webhooks: 25,
  // Live ones (not revoked): each is a Redis user, and holds up to POOL_GATE_MAX_CONNECTIONS_PER_CREDENTIAL of the pool gate's connections.
  pool_credentials: 10,
  // Preview environments held at once (deleting ones too, until they are gone): a CI that forgets to delete them meets this, not the environments quota.
  previews: 50,
};

/** What the operator may set for one tenant: any subset of the limits; `null` goes back to the default. */
export const QuotaLimitOverrides = z
  .object(Object.fromEntries(QUOTA_NAMES.map((name) => [name, z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable()])) as Record<
    QuotaName,
    z.ZodNullable<z.ZodNumber>
  >)
  .partial()
  .strict();
export type QuotaLimitOverrides = z.infer<typeof QuotaLimitOverrides>;

/** The limits in force: the defaults, with the tenant's own limits over them. */
export function effectiveQuotaLimits(overrides: QuotaLimitOverrides | undefined): QuotaLimits {
  const limits = { ...DEFAULT_QUOTA_LIMITS };
  for (const name of QUOTA_NAMES) {
    const own = overrides?.[name];
    if (typeof own === 'number') limits[name] = own;
  }
  return limits;
}

/** A tenant-wide quota: its limit and what the tenant uses of it now. */
export const TenantQuotaUse = z.object({ limit: z.number().int(), used: z.number().int() });
export type TenantQuotaUse = z.infer<typeof TenantQuotaUse>;

/** A per-environment quota: `used` is the fullest environment's, `by_environment` each environment's use above zero. */
export const EnvironmentQuotaUse = z.object({
  limit: z.number().int(),
  used: z.number().int(),
  by_environment: z.record(z.string(), z.number().int()),
});
export type EnvironmentQuotaUse = z.infer<typeof EnvironmentQuotaUse>;

/** A per-environment quota's use from each environment's count. */
export function environmentQuotaUse(limit: number, counts: Record<string, number>): EnvironmentQuotaUse {
  const byEnvironment = Object.fromEntries(Object.entries(counts).filter(([, count]) => count > 0));
  return { limit, used: Math.max(0, ...Object.values(byEnvironment)), by_environment: byEnvironment };
}

/** `GET /api/v1/quotas`: each quota's limit and the tenant's use. */
export const Quotas = z.object({
  queued_runs: TenantQuotaUse,
  queued_runs_per_environment: EnvironmentQuotaUse,
  environments: TenantQuotaUse,
  bundle_bytes: TenantQuotaUse,
  materialization_bytes: TenantQuotaUse,
  secrets_per_environment: EnvironmentQuotaUse,
  webhooks: TenantQuotaUse,
  pool_credentials: TenantQuotaUse,
  previews: TenantQuotaUse,
});
export type Quotas = z.infer<typeof Quotas>;

/** The deployment scope's part of `GET /quotas`, over its internal API. */
export const DeploymentQuotas = Quotas.pick({ bundle_bytes: true, materialization_bytes: true });
export type DeploymentQuotas = z.infer<typeof DeploymentQuotas>;

/**
 * The secrets scope's part of `GET /quotas`, over its internal API: counts by environment
 * id (the placement scope, which owns environments, names them).
 */
export const SecretsQuotas = z.object({
  secrets_per_environment: z.object({ limit: z.number().int(), by_environment_id: z.record(z.string(), z.number().int()) }),
});
export type SecretsQuotas = z.infer<typeof SecretsQuotas>;
