import type { BundleRepository, DeploymentRepository, MaterializationRepository } from '@envengine/deployment-data';
import type { InternalMount } from '@envengine/service-kit';
import { internalRouter } from './internal.routes.ts';

export interface DeploymentInternalApiDeps {
  bundles: BundleRepository;
  deployments: DeploymentRepository;
  materializations: MaterializationRepository;
}

/** The deployment scope's part of `/internal/v1` (InternalApi's `service: 'deployment'` routes). */
export function deploymentInternalApi(deps: DeploymentInternalApiDeps): InternalMount[] {
  return [{ credential: 'internal', routes: internalRouter(deps) }];
}
