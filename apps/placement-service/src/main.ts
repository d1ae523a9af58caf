import { runInternalService } from '@envengine/service-kit';
import { loadPlacementConfig } from './config.ts';
import { EnvironmentRepository } from './environments/environment.repository.ts';
import { environmentsRouter } from './environments/environments.routes.ts';

await runInternalService({
  service: 'placement-service',
  config: loadPlacementConfig(process.env),
  routes: async ({ mongo }) => {
    const environments = new EnvironmentRepository(mongo);
    await environments.ensureIndexes();
    return environmentsRouter(environments);
  },
});
