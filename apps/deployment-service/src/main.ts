import { Router } from 'express';
import { internalServiceConfigSchema, parseConfig, runInternalService } from '@envengine/service-kit';

const config = parseConfig(internalServiceConfigSchema({ port: 8082, mongoDb: 'envengine_deployment' }), process.env);

// Owns bundles, deployments and assets (filled by the deployments issue). Until then it serves health, readiness against its
// database, and answers 404 not_found for every API path the gateway sends it.
await runInternalService({
  service: 'deployment-service',
  config,
  routes: async () => Router(),
});
