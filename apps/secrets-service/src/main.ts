import { LocalSecretStore } from '@envengine/local-secret-store';
import { PlacementClient } from '@envengine/service-clients';
import { runInternalService } from '@envengine/service-kit';
import { TenantQuotas } from '@envengine/tenant-data';
import { BindingRepository } from './bindings/binding.repository.ts';
import { BindingsService } from './bindings/bindings.service.ts';
import { loadSecretsConfig } from './config.ts';
import { EnvironmentDirectory } from './environments/environment-directory.ts';
import { lifecycleRouter } from './environments/lifecycle.routes.ts';
import { BindingResolver } from './resolution/binding-resolver.ts';
import { resolutionRouter } from './resolution/resolution.routes.ts';
import { SecretAuditRepository } from './resolution/secret-audit.repository.ts';
import { SecretBackends } from './secrets/secret-backend.ts';
import { SecretRowRepository } from './secrets/secret-row.repository.ts';
import { SecretsService } from './secrets/secrets.service.ts';
import { secretsQuotaRouter } from './secrets/secrets.routes.ts';
import { secretsPublicApi } from './public-api.ts';

const config = loadSecretsConfig(process.env);
const placement = new PlacementClient({ origins: config.PLACEMENT_SERVICE_URL, credential: config.INTERNAL_CREDENTIAL });

await runInternalService({
  service: 'secrets-service',
  config,
  routes: async ({ mongo }) => {
    const localStore = new LocalSecretStore(mongo, config.keyring);
    const rows = new SecretRowRepository(mongo);
    const bindingRows = new BindingRepository(mongo);
    const audit = new SecretAuditRepository(mongo);
    await Promise.all([localStore.ensureIndexes(), rows.ensureIndexes(), bindingRows.ensureIndexes(), audit.ensureIndexes()]);

    const backends = new SecretBackends([localStore], localStore.name);
    const environments = new EnvironmentDirectory(placement);
    const quotas = new TenantQuotas(mongo);
    await quotas.ensureIndexes();
    const secrets = new SecretsService(mongo, rows, backends, audit, quotas);
    return {
      api: secretsPublicApi({ environments, secrets, bindings: new BindingsService(bindingRows, rows) }),
      privateApi: [
        // An environment's tear-down, for the lifecycle workflow (the internal credential; it opens no value).
        // The placement-service's GET /quotas: the secrets quota is this scope's.
        { path: '/internal/v1/quotas', credential: config.INTERNAL_CREDENTIAL, routes: secretsQuotaRouter(secrets) },
        { path: '/internal/v1/lifecycle', credential: config.INTERNAL_CREDENTIAL, routes: lifecycleRouter(secrets, bindingRows, audit) },
        { credential: config.RESOLVER_CREDENTIAL, routes: resolutionRouter(new BindingResolver(bindingRows, rows, backends, audit), bindingRows) },
      ],
    };
  },
  onStop: () => placement.close(),
});
