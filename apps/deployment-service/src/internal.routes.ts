import { Router } from 'express';
import { RecordMaterializationRequest } from '@envengine/contracts';
import type { MaterializationRepository } from '@envengine/deployment-data';
import { defineRoute } from '@envengine/service-kit';

/**
 * `/internal/v1`: what other scopes need from this one (today: recording a
 * materialization, as a run does after `ctx.emit`). Behind the internal credential; the
 * gateway never forwards here. The scope's own workflow-worker reads and writes the
 * scope's collections directly, through `@envengine/deployment-data`.
 */
export function internalRouter(deps: { materializations: MaterializationRepository }): Router {
  const router = Router();
  router.post(
    '/materializations',
    defineRoute({ body: RecordMaterializationRequest }, async ({ tenantId, body }) => ({
      status: 201,
      data: await deps.materializations.record(tenantId, body),
    })),
  );
  return router;
}
