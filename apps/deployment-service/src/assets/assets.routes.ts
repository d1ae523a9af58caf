import { Router } from 'express';
import { PublicApi, type AssetListing } from '@envengine/contracts';
import { ManifestV1 } from '@envengine/manifest-rules';
import type { PlacementClient } from '@envengine/service-clients';
import { mountEndpoint, notFound } from '@envengine/service-kit';
import type { DeploymentRepository, MaterializationRepository } from '@envengine/deployment-data';

/** `GET /environments/:name/assets`: each asset of the active deployment with its latest materialization. */
export function assetsRouter(placement: PlacementClient, deployments: DeploymentRepository, materializations: MaterializationRepository): Router {
  const router = Router();
  mountEndpoint(router, PublicApi.listAssets, async ({ tenantId, params, requestId }) => {
      const environment = await placement.findEnvironment(tenantId, params.name, requestId);
      if (!environment) throw notFound(`Environment "${params.name}"`);
      if (!environment.active_deployment_id) return { data: [] };
      const manifest = ManifestV1.safeParse(await deployments.manifest(tenantId, environment.active_deployment_id));
      if (!manifest.success) return { data: [] };
      const latest = await materializations.latest(tenantId, environment.id, manifest.data.assets.map((asset) => asset.key));
      const listing: AssetListing[] = manifest.data.assets.map((asset) => {
        const materialization = latest.get(asset.key) ?? null;
        return {
          key: asset.key,
          binding: asset.binding,
          schema: asset.schema ? { columns: asset.schema.columns.map((column) => ({ ...column, nullable: column.nullable ?? false })) } : null,
          status: materialization?.status ?? null,
          latest_materialization: materialization,
        };
      });
      return { data: listing };
  });
  return router;
}
