import { EventOutbox, OutboxRelay } from '@envengine/event-log';
import { LocalSecretStore } from '@envengine/local-secret-store';
import { PlacementClient } from '@envengine/service-clients';
import { scopeTaskQueue } from '@envengine/contracts';
import { privateApiOf, runInternalService, temporalConnectionOptions } from '@envengine/service-kit';
import { ActivityWorker, installTemporalRuntime } from '@envengine/temporal-worker';
import { tracingConfigured } from '@envengine/tracing';
import { TenantQuotas } from '@envengine/tenant-data';
import { BindingRepository } from './bindings/binding.repository.ts';
import { BindingsService } from './bindings/bindings.service.ts';
import { loadSecretsConfig } from './config.ts';
import { EnvironmentDirectory } from './environments/environment-directory.ts';
import { environmentRetirement } from './environments/environment-retirement.ts';
import { secretsLifecycleActivities } from './environments/lifecycle-activities.ts';
import { BindingResolver } from './resolution/binding-resolver.ts';
import { SecretAuditRepository } from './resolution/secret-audit.repository.ts';
import { SecretBackends } from './secrets/secret-backend.ts';
import { SecretRowRepository } from './secrets/secret-row.repository.ts';
import { SecretsService } from './secrets/secrets.service.ts';
import { secretsInternalApi } from './internal-api.ts';
import { secretsPublicApi } from './public-api.ts';

const config = loadSecretsConfig(process.env);
const placement = new PlacementClient({ origins: config.PLACEMENT_SERVICE_URL, credential: config.INTERNAL_CREDENTIAL });
let relay: OutboxRelay | undefined;
/** This scope's tear-down step, served on its own task queue. */
let activityWorker: ActivityWorker | undefined;

await runInternalService({
  service: 'secrets-service',
  config,
  routes: async ({ mongo, log }) => {
    const localStore = new LocalSecretStore(mongo, config.keyring);
    const rows = new SecretRowRepository(mongo);
    const bindingRows = new BindingRepository(mongo);
    const audit = new SecretAuditRepository(mongo);
    const outbox = new EventOutbox(mongo);
    // The scope's events go to the audit log, which the placement-service keeps. The relay
    // looks as soon as a transaction that recorded one has ended (`outbox.onRecorded`).
    relay = new OutboxRelay({ outbox, connection: mongo, log, publish: async (events) => void (await placement.publishEvents(events)) });
    await Promise.all([
      localStore.ensureIndexes(),
      rows.ensureIndexes(),
      bindingRows.ensureIndexes(),
      audit.ensureIndexes(),
      outbox.ensureIndexes(),
      relay.ensureIndexes(),
    ]);

    const backends = new SecretBackends([localStore], localStore.name);
    const environments = new EnvironmentDirectory(placement);
    const quotas = new TenantQuotas(mongo);
    await quotas.ensureIndexes();
    const secrets = new SecretsService(mongo, rows, backends, audit, quotas, outbox);
    const retire = environmentRetirement(secrets, bindingRows, audit);
    // In the background: it connects when Temporal answers; the API serves before that.
    installTemporalRuntime(log);
    activityWorker = new ActivityWorker({
      connection: temporalConnectionOptions(config),
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: scopeTaskQueue(config.DEPLOYMENTS_TASK_QUEUE, 'secrets'),
      activities: secretsLifecycleActivities(retire),
      traced: tracingConfigured(config),
      log,
    });
    activityWorker.start();
    return {
      api: secretsPublicApi({ environments, secrets, bindings: new BindingsService(mongo, bindingRows, rows, outbox) }),
      privateApi: privateApiOf(
        secretsInternalApi({ secrets, bindings: bindingRows, retire, resolver: new BindingResolver(bindingRows, rows, backends, audit) }),
        { internal: config.INTERNAL_CREDENTIAL, resolver: config.RESOLVER_CREDENTIAL },
      ),
    };
  },
  onStop: async () => {
    // First: a step in flight ends while the database is still open.
    await activityWorker?.stop();
    // The batch in hand is sent before the client it goes through is closed.
    await relay?.stop();
    await placement.close();
  },
});
// Once the service serves: rows left pending by a previous run leave now too.
relay?.start();
