import { Router } from 'express';
import { internalServiceConfigSchema, parseConfig, runInternalService } from '@envengine/service-kit';

const config = parseConfig(internalServiceConfigSchema({ port: 8083, mongoDb: 'envengine_secrets' }), process.env);

// Owns secrets and bindings (filled by the secrets issue). Until then it serves health, readiness against its
// database, and answers 404 not_found for every API path the gateway sends it.
await runInternalService({
  service: 'secrets-service',
  config,
  routes: async () => Router(),
});
