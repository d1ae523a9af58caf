import { Router } from 'express';
import { bindingsRouter } from './bindings/bindings.routes.ts';
import type { BindingsService } from './bindings/bindings.service.ts';
import type { EnvironmentDirectory } from './environments/environment-directory.ts';
import { secretsRouter } from './secrets/secrets.routes.ts';
import type { SecretsService } from './secrets/secrets.service.ts';

export interface SecretsPublicApiDeps {
  environments: EnvironmentDirectory;
  secrets: SecretsService;
  bindings: BindingsService;
}

/** The secrets scope's part of `/api/v1` (PublicApi's `service: 'secrets'` endpoints). */
export function secretsPublicApi(deps: SecretsPublicApiDeps): Router {
  const api = Router();
  api.use(secretsRouter(deps.environments, deps.secrets));
  api.use(bindingsRouter(deps.environments, deps.bindings));
  return api;
}
