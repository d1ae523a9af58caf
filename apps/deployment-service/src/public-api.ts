import { Router } from 'express';
import type { BundleRepository, DeploymentRepository, MaterializationRepository } from '@envengine/deployment-data';
import type { BundleLimits } from '@envengine/contracts';
import type { PlacementClient } from '@envengine/service-clients';
import { assetsRouter } from './assets/assets.routes.ts';
import { bundlesRouter } from './bundles/bundles.routes.ts';
import { deploymentsRouter } from './deployments/deployments.routes.ts';
import { DeploymentDiffs } from './deployments/deployment-diffs.ts';
import type { DeploymentsService } from './deployments/deployments.service.ts';

export interface DeploymentPublicApiDeps {
  deployments: DeploymentsService;
  placement: PlacementClient;
  deploymentRows: DeploymentRepository;
  materializations: MaterializationRepository;
  bundles: BundleRepository;
  bundleLimits: BundleLimits;
}

/**
 * The deployment scope's part of `/api/v1` (PublicApi's `service: 'deployment'`
 * endpoints): JSON routes, and the bundle routes that stream their bodies.
 */
export function deploymentPublicApi(deps: DeploymentPublicApiDeps): { api: Router; streamingApi: Router } {
  const api = Router();
  api.use(deploymentsRouter(deps.deployments, new DeploymentDiffs(deps.deploymentRows, deps.bundles, deps.placement)));
  api.use(assetsRouter(deps.placement, deps.deploymentRows, deps.materializations));
  return { api, streamingApi: bundlesRouter(deps.bundles, deps.bundleLimits) };
}
