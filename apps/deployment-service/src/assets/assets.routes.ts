import { Router } from 'express';
import { ManifestV1, PublicApi, type AssetListing } from '@envengine/contracts';
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
          binding: asset.binding ?? null,
          schema: asset.schema ? { columns: asset.schema.columns.map((column) => ({ ...column, nullable: column.nullable ?? false })) } : null,
          status: materialization?.status ?? null,
          latest_materialization: materialization,
        };
      });
      return { data: listing };
  });

  mountEndpoint(router, PublicApi.listMaterializations, async ({ tenantId, params, query, requestId }) => {
    const environment = await placement.findEnvironment(tenantId, params.name, requestId);
    if (!environment) throw notFound(`Environment "${params.name}"`);
    const page = await materializations.page(tenantId, environment.id, params.key, query);
    if (page.length === 0 && query.before === undefined && !(await declaresAsset(deployments, tenantId, environment.active_deployment_id, params.key))) {
      // Neither declared nor ever stored: most likely a typo, which an empty list would hide.
      throw notFound(`Asset "${params.key}" of environment "${params.name}"`);
    }
    return { data: page };
  });
  return router;
}

async function declaresAsset(deployments: DeploymentRepository, tenantId: string, deploymentId: string | null, key: string): Promise<boolean> {
  if (!deploymentId) return false;
  const manifest = ManifestV1.safeParse(await deployments.manifest(tenantId, deploymentId));
  return manifest.success && manifest.data.assets.some((asset) => asset.key === key);
}
