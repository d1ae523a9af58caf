import { Router } from 'express';
import { z } from 'zod';
import { BundleRef, RecordDeploymentRequest, RecordMaterializationRequest } from '@envengine/contracts';
import { defineRoute, notFound } from '@envengine/service-kit';
import type { ActivationLockRepository, BundleRepository, DeploymentRepository, MaterializationRepository } from '@envengine/deployment-data';
import { recheckStoredColumns } from './activation/recheck.ts';

const LockRequest = z.strictObject({ holder: z.string().min(1).max(300) });

/**
 * `/internal/v1`: what the workflow-worker's activities (and, later, runs) need from this
 * service. Behind the internal credential; the gateway never forwards here.
 */
export function internalRouter(deps: {
  bundles: BundleRepository;
  deployments: DeploymentRepository;
  locks: ActivationLockRepository;
  materializations: MaterializationRepository;
}): Router {
  const router = Router();

  router.get(
    '/bundles/:ref/entries',
    defineRoute({ params: z.object({ ref: z.string() }) }, async ({ tenantId, params }) => {
      const entries = BundleRef.safeParse(params.ref).success ? await deps.bundles.entries(tenantId, params.ref) : null;
      return { data: { entries } };
    }),
  );

  router.post(
    '/deployments',
    defineRoute({ body: RecordDeploymentRequest }, async ({ tenantId, body: record }) => {
      if (record.tenantId !== tenantId) throw notFound('Tenant');
      await deps.deployments.recordOnce(record, new Date());
      return { data: { id: record.deploymentId } };
    }),
  );

  router.get(
    '/deployments/:id',
    defineRoute({ params: z.object({ id: z.string() }) }, async ({ tenantId, params }) => {
      const row = await deps.deployments.find(tenantId, params.id);
      if (!row) throw notFound(`Deployment ${params.id}`);
      return { data: { id: row._id, status: row.status, git: row.git, environment_id: row.environment_id } };
    }),
  );

  router.get(
    '/deployments/:id/manifest',
    defineRoute({ params: z.object({ id: z.string() }) }, async ({ tenantId, params }) => {
      const manifest = await deps.deployments.manifest(tenantId, params.id);
      if (manifest === undefined) throw notFound(`Deployment ${params.id}`);
      return { data: { manifest } };
    }),
  );

  router.post(
    '/deployments/:id/recheck',
    defineRoute({ params: z.object({ id: z.string() }), bodyOptional: true, body: z.strictObject({}) }, async ({ tenantId, params }) => {
      const target = await deps.deployments.withManifest(tenantId, params.id);
      if (!target) throw notFound(`Deployment ${params.id}`);
      return {
        data: await recheckStoredColumns(deps.materializations, {
          tenantId,
          environmentId: target.environmentId,
          deploymentId: params.id,
          manifest: target.manifest,
        }),
      };
    }),
  );

  router.post(
    '/activation-locks/:environmentId',
    defineRoute({ params: z.object({ environmentId: z.string() }), body: LockRequest }, async ({ tenantId, params, body }) => {
      await deps.locks.acquire(tenantId, params.environmentId, body.holder);
      return { data: { holder: body.holder } };
    }),
  );

  router.delete(
    '/activation-locks/:environmentId',
    defineRoute({ params: z.object({ environmentId: z.string() }), body: LockRequest }, async ({ tenantId, params, body }) => {
      await deps.locks.release(tenantId, params.environmentId, body.holder);
      return { data: { holder: body.holder } };
    }),
  );

  router.post(
    '/materializations',
    defineRoute({ body: RecordMaterializationRequest }, async ({ tenantId, body }) => ({
      status: 201,
      data: await deps.materializations.record(tenantId, body),
    })),
  );

  return router;
}
