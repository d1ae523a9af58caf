import mongoose from 'mongoose';
import { QUOTA_NAMES, QUOTA_RULES, QuotaLimitOverrides, type QuotaLimits, type QuotaName } from '@envengine/contracts';
import { TenantQuotas } from '@envengine/tenant-data';
import { SERVICE_DATABASES } from './services.ts';

/** The database of each scope that keeps quota limits (each scope checks its own quotas). */
export interface QuotaDatabases {
  placement: string;
  deployment: string;
  secrets: string;
}

/** The scopes' databases, as the services name them (each overridable as the admin command's other settings are). */
export function quotaDatabases(env: NodeJS.ProcessEnv = process.env): QuotaDatabases {
  return {
    placement: env.PLACEMENT_MONGO_DB ?? SERVICE_DATABASES['placement-service'],
    deployment: env.DEPLOYMENT_MONGO_DB ?? SERVICE_DATABASES['deployment-service'],
    secrets: env.SECRETS_MONGO_DB ?? SERVICE_DATABASES['secrets-service'],
  };
}

/**
 * Reads `queued_runs=100 bundle_bytes=default …` into overrides; throws a sentence naming
 * the bad argument. `default` puts a quota back to the engine's default.
 */
export function parseQuotaAssignments(assignments: readonly string[]): QuotaLimitOverrides {
  const overrides: Record<string, number | null> = {};
  for (const assignment of assignments) {
    const match = /^([a-z_]+)=(\d+|default)$/.exec(assignment);
    if (!match || !(QUOTA_NAMES as readonly string[]).includes(match[1]!)) {
      throw new Error(`"${assignment}" is not <quota>=<count>|default; the quotas are ${QUOTA_NAMES.join(', ')}`);
    }
    overrides[match[1]!] = match[2] === 'default' ? null : Number(match[2]);
  }
  return QuotaLimitOverrides.parse(overrides);
}

/**
 * Sets some of a tenant's quota limits, each in the database of the scope that checks it,
 * and answers the limits then in force. Every replica of that scope reads the limit at its
 * next admission.
 */
export async function setTenantQuotas(mongoUrl: string, databases: QuotaDatabases, tenantId: string, overrides: QuotaLimitOverrides): Promise<QuotaLimits> {
  const connection = mongoose.createConnection(mongoUrl, { serverSelectionTimeoutMS: 5000 });
  try {
    await connection.asPromise();
    const inForce = {} as QuotaLimits;
    for (const scope of ['placement', 'deployment', 'secrets'] as const) {
      const names = QUOTA_NAMES.filter((name) => QUOTA_RULES[name].scope === scope);
      const own = Object.fromEntries(Object.entries(overrides).filter(([name]) => names.includes(name as QuotaName)));
      const quotas = new TenantQuotas(connection.useDb(databases[scope], { useCache: true }));
      await quotas.ensureIndexes();
      const limits = Object.keys(own).length > 0 ? await quotas.set(tenantId, own) : await quotas.limits(tenantId);
      for (const name of names) inForce[name] = limits[name];
    }
    return inForce;
  } finally {
    await connection.close();
  }
}
