import type { InternalMount } from '@envengine/service-kit';
import type { BindingRepository } from './bindings/binding.repository.ts';
import { LIFECYCLE_MOUNT, lifecycleRouter } from './environments/lifecycle.routes.ts';
import type { BindingResolver } from './resolution/binding-resolver.ts';
import { resolutionRouter } from './resolution/resolution.routes.ts';
import { SECRETS_QUOTA_MOUNT, secretsQuotaRouter } from './secrets/secrets.routes.ts';
import type { SecretsService } from './secrets/secrets.service.ts';
import type { environmentRetirement } from './environments/environment-retirement.ts';

export interface SecretsInternalApiDeps {
  secrets: SecretsService;
  bindings: BindingRepository;
  retire: ReturnType<typeof environmentRetirement>;
  resolver: BindingResolver;
}

/**
 * The secrets scope's part of `/internal/v1` (InternalApi's `service: 'secrets'` routes),
 * behind two credentials: the internal one's routes first, each under a path of its own,
 * then the resolver credential's, which opens the rest.
 */
export function secretsInternalApi(deps: SecretsInternalApiDeps): InternalMount[] {
  return [
    // The placement-service's GET /quotas: the secrets quota is this scope's.
    { credential: 'internal', path: SECRETS_QUOTA_MOUNT, routes: secretsQuotaRouter(deps.secrets) },
    // An environment's tear-down, for the lifecycle workflow (the internal credential opens no value).
    { credential: 'internal', path: LIFECYCLE_MOUNT, routes: lifecycleRouter(deps.retire) },
    { credential: 'resolver', routes: resolutionRouter(deps.resolver, deps.bindings) },
  ];
}
