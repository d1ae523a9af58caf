import { environmentQuotaUse, type Quotas } from '@envengine/contracts';
import type { DeploymentClient, SecretsClient } from '@envengine/service-clients';
import type { TenantQuotas } from '@envengine/tenant-data';
import type { EnvironmentRepository } from '../environments/environment.repository.ts';
import type { RunRepository } from '../runs/run.repository.ts';
import type { WebhookRepository } from '../webhooks/webhook.repository.ts';
import type { PoolCredentialRepository } from '../pool/pool-credential.repository.ts';

/**
 * `GET /quotas`: this scope's quotas (queued runs, environments) read here, the others'
 * asked of the scope that checks each one, once per request.
 */
export class QuotasService {
  constructor(
    private readonly quotas: TenantQuotas,
    private readonly environments: EnvironmentRepository,
    private readonly runs: RunRepository,
    private readonly deployments: DeploymentClient,
    private readonly secrets: SecretsClient,
    private readonly webhooks: WebhookRepository,
    private readonly poolCredentials: PoolCredentialRepository,
  ) {}

  async get(tenantId: string, requestId?: string): Promise<Quotas> {
    const [limits, environments, queued, deployment, secrets, webhooks, poolCredentials] = await Promise.all([
      this.quotas.limits(tenantId),
      this.environments.list(tenantId),
      this.runs.queuedRunCounts(tenantId),
      this.deployments.quotas(tenantId, requestId),
      this.secrets.quotas(tenantId, requestId),
      this.webhooks.count(tenantId),
      this.poolCredentials.countActive(tenantId),
    ]);
    return {
      queued_runs: { limit: limits.queued_runs, used: queued.total },
      queued_runs_per_environment: environmentQuotaUse(limits.queued_runs_per_environment, queued.byEnvironment),
      environments: { limit: limits.environments, used: environments.length },
      ...deployment,
      secrets_per_environment: environmentQuotaUse(
        secrets.secrets_per_environment.limit,
        // Secrets of an environment already gone (its tear-down retires them) have no name to show.
        Object.fromEntries(environments.flatMap((environment) => {
          const count = secrets.secrets_per_environment.by_environment_id[environment.id];
          return count === undefined ? [] : [[environment.name, count]];
        })),
      ),
      webhooks: { limit: limits.webhooks, used: webhooks },
      pool_credentials: { limit: limits.pool_credentials, used: poolCredentials },
      previews: { limit: limits.previews, used: environments.filter((environment) => environment.kind === 'preview').length },
    };
  }
}
