import { LocalSecretStore } from '@envengine/local-secret-store';
import { PlacementClient } from '@envengine/service-clients';
import { privateApiOf, runInternalService } from '@envengine/service-kit';
import { TenantQuotas } from '@envengine/tenant-data';
import { BindingRepository } from './bindings/binding.repository.ts';
import { BindingsService } from './bindings/bindings.service.ts';
import { loadSecretsConfig } from './config.ts';
import { EnvironmentDirectory } from './environments/environment-directory.ts';
import { BindingResolver } from './resolution/binding-resolver.ts';
import { SecretAuditRepository } from './resolution/secret-audit.repository.ts';
import { SecretBackends } from './secrets/secret-backend.ts';
import { SecretRowRepository } from './secrets/secret-row.repository.ts';
import { SecretsService } from './secrets/secrets.service.ts';
import { secretsInternalApi } from './internal-api.ts';
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
      privateApi: privateApiOf(
        secretsInternalApi({ secrets, bindings: bindingRows, audit, resolver: new BindingResolver(bindingRows, rows, backends, audit) }),
        { internal: config.INTERNAL_CREDENTIAL, resolver: config.RESOLVER_CREDENTIAL },
      ),
    };
  },
  onStop: () => placement.close(),
});
