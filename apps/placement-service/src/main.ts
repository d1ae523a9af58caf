import { runInternalService } from '@envengine/service-kit';
import { loadPlacementConfig } from './config.ts';
import { EnvironmentRepository } from './environments/environment.repository.ts';
import { environmentsInternalRouter } from './environments/environments.internal-routes.ts';
import { environmentsRouter } from './environments/environments.routes.ts';

const config = loadPlacementConfig(process.env);

await runInternalService({
  service: 'placement-service',
  config,
  routes: async ({ mongo }) => {
    const environments = new EnvironmentRepository(mongo);
    await environments.ensureIndexes();
    return {
      api: environmentsRouter(environments),
      // Same credential as the gateway's, but under a prefix the gateway never forwards to.
      privateApi: { credential: config.INTERNAL_CREDENTIAL, routes: environmentsInternalRouter(environments) },
    };
  },
});
