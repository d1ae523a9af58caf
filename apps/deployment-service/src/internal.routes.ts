import { Router } from 'express';
import { InternalApi, ManifestV1, type DeploymentRunSpec, type MaterializationRetracted } from '@envengine/contracts';
import type { BundleRepository, DeploymentRepository, MaterializationRepository } from '@envengine/deployment-data';
import { mountEndpoint, notFound } from '@envengine/service-kit';

/**
 * `/internal/v1`: what other scopes need from this one. The placement-service reads the
 * deployment a run executes against, and on behalf of a worker's attempt records a
 * materialization (after `ctx.emit`) and finds an upstream's latest usable one (for
 * `ctx.read`), and asks this scope's part of `GET /quotas`. Behind the internal credential; the gateway never forwards here. The
 * scope's own workflow-worker reads and writes the scope's collections directly.
 */
export function internalRouter(deps: { bundles: BundleRepository; deployments: DeploymentRepository; materializations: MaterializationRepository }): Router {
  const router = Router();
  // The placement-service's GET /quotas: the stored-bundle and stored-materialization quotas are this scope's.
  mountEndpoint(router, InternalApi.deploymentQuotas, async ({ tenantId }) => {
    const [bundles, materializations] = await Promise.all([deps.bundles.quotaUse(tenantId), deps.materializations.quotaUse(tenantId)]);
    return { data: { ...bundles, ...materializations } };
  });

  mountEndpoint(router, InternalApi.recordMaterialization, async ({ tenantId, body }) => ({
    status: 201,
    data: await deps.materializations.record(tenantId, body),
  }));

  mountEndpoint(router, InternalApi.retractMaterialization, async ({ tenantId, params, body }) => {
    const answer: MaterializationRetracted = { id: params.id, retracted: await deps.materializations.retract(tenantId, params.id, body.attempt_id) };
    return { data: answer };
  });

  mountEndpoint(router, InternalApi.latestUsableMaterialization, async ({ tenantId, params }) => ({
    data: (await deps.materializations.latestUsable(tenantId, params.environmentId, params.key)) ?? null,
  }));

  mountEndpoint(router, InternalApi.materializationOfAsset, async ({ tenantId, params }) => {
    const materialization = await deps.materializations.findOfAsset(tenantId, params.environmentId, params.key, params.id);
    if (!materialization) throw notFound(`Materialization "${params.id}" of asset "${params.key}"`);
    return { data: materialization };
  });

  mountEndpoint(router, InternalApi.deploymentRunSpec, async ({ tenantId, params }) => {
    const [row, stored] = await Promise.all([deps.deployments.find(tenantId, params.id), deps.deployments.manifest(tenantId, params.id)]);
    // Only a manifest that passed the ingest's validation is run (an active deployment's always did).
    const manifest = ManifestV1.safeParse(stored);
    if (!row || !manifest.success) throw notFound(`Deployment "${params.id}"`);
    const spec: DeploymentRunSpec = {
      id: row._id,
      environment_id: row.environment_id,
      status: row.status,
      bundle_ref: row.bundle_ref,
      manifest: manifest.data,
    };
    return { data: spec };
  });
  return router;
}
