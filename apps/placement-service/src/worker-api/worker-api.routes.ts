import { Router } from 'express';
import {
  AppendLogsRequest,
  ConnectionRequest,
  StorageRequest,
  ATTEMPT_LEASE_HEADER,
  FinishAttemptRequest,
  INTERNAL_HEADERS,
  MaterializationWritten,
  ReleaseAttemptRequest,
  StartAttemptRequest,
  WorkerAssetParams,
  WorkerAttemptParams,
  WorkerConnectionParams,
  WorkerHeartbeatRequest,
} from '@envengine/contracts';
import { ApiError, defineRoute } from '@envengine/service-kit';
import type { LeaseCheck } from '../runs/run.repository.ts';
import type { WorkerApiService } from './worker-api.service.ts';

const LEASE_PATTERN = /^[A-Za-z0-9_-]{8,200}$/;

function leaseCheck(tenantId: string, attemptId: string, header: (name: string) => string | undefined): LeaseCheck {
  const lease = header(ATTEMPT_LEASE_HEADER);
  if (!lease || !LEASE_PATTERN.test(lease)) {
    throw new ApiError('invalid_request', `Worker calls about an attempt carry its lease in the ${ATTEMPT_LEASE_HEADER} header.`, {
      details: [{ path: ATTEMPT_LEASE_HEADER, message: 'is required' }],
    });
  }
  return { tenantId, attemptId, lease };
}

/**
 * `/api/v1/worker/…`: reached through the gateway with a pool token (a tenant's worker)
 * or by the engine's own runner with the internal credential. The gateway names the
 * pool credential in a header, so that the pool view can show which one a worker uses.
 */
export function workerApiRouter(service: WorkerApiService): Router {
  const router = Router();
  const credentialOf = (header: (name: string) => string | undefined) => header(INTERNAL_HEADERS.poolCredential) ?? null;

  router.post(
    '/worker/heartbeat',
    defineRoute({ body: WorkerHeartbeatRequest }, async ({ tenantId, body, header }) => ({
      data: { superseded: await service.heartbeat(tenantId, body, credentialOf(header)) },
    })),
  );

  router.post(
    '/worker/attempts/:id/start',
    defineRoute({ params: WorkerAttemptParams, body: StartAttemptRequest }, async ({ tenantId, params, body, header }) => ({
      data: await service.start(tenantId, params.id, body.worker, credentialOf(header)),
    })),
  );

  router.post(
    '/worker/attempts/:id/logs',
    defineRoute({ params: WorkerAttemptParams, body: AppendLogsRequest }, async ({ tenantId, params, body, header }) => {
      return { data: { stored: await service.appendLogs(leaseCheck(tenantId, params.id, header), body) } };
    }),
  );

  router.get(
    '/worker/attempts/:id/upstreams/:key',
    defineRoute({ params: WorkerAssetParams }, async ({ tenantId, params, header }) => ({
      data: await service.upstream(leaseCheck(tenantId, params.id, header), params.key),
    })),
  );

  router.post(
    '/worker/attempts/:id/connections/:name',
    defineRoute({ params: WorkerConnectionParams, body: ConnectionRequest }, async ({ tenantId, params, body, header }) => ({
      data: await service.connection(leaseCheck(tenantId, params.id, header), body.asset, params.name),
    })),
  );

  router.post(
    '/worker/attempts/:id/storage',
    defineRoute({ params: WorkerAttemptParams, body: StorageRequest }, async ({ tenantId, params, body, header }) => ({
      data: await service.storage(leaseCheck(tenantId, params.id, header), body.asset),
    })),
  );

  router.post(
    '/worker/attempts/:id/assets/:key/materializations',
    defineRoute({ params: WorkerAssetParams, body: MaterializationWritten }, async ({ tenantId, params, body, header }) => ({
      status: 201,
      data: await service.recordMaterialization(leaseCheck(tenantId, params.id, header), params.key, body),
    })),
  );

  router.post(
    '/worker/attempts/:id/finish',
    defineRoute({ params: WorkerAttemptParams, body: FinishAttemptRequest }, async ({ tenantId, params, body, header }) => ({
      data: await service.finish(leaseCheck(tenantId, params.id, header), body),
    })),
  );

  router.post(
    '/worker/attempts/:id/release',
    defineRoute({ params: WorkerAttemptParams, body: ReleaseAttemptRequest, bodyOptional: true }, async ({ tenantId, params, header }) => ({
      data: await service.release(leaseCheck(tenantId, params.id, header)),
    })),
  );

  return router;
}
