import { Router } from 'express';
import { ATTEMPT_LEASE_HEADER, ATTEMPT_LEASE_PATTERN, INTERNAL_HEADERS, PublicApi } from '@envengine/contracts';
import { ApiError, mountEndpoint } from '@envengine/service-kit';
import type { LeaseCheck } from '../runs/run.repository.ts';
import type { WorkerApiService } from './worker-api.service.ts';

function leaseCheck(tenantId: string, attemptId: string, header: (name: string) => string | undefined): LeaseCheck {
  const lease = header(ATTEMPT_LEASE_HEADER);
  if (!lease || !ATTEMPT_LEASE_PATTERN.test(lease)) {
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

  mountEndpoint(router, PublicApi.workerHeartbeat, async ({ tenantId, body, header }) => ({
    data: { superseded: await service.heartbeat(tenantId, body, credentialOf(header)) },
  }));

  mountEndpoint(router, PublicApi.startAttempt, async ({ tenantId, params, body, header, cause }) => ({
    data: await service.start(tenantId, params.id, body.worker, body.start_key ?? null, credentialOf(header), cause),
  }));

  mountEndpoint(router, PublicApi.appendAttemptLogs, async ({ tenantId, params, body, header }) => ({
    data: { stored: await service.appendLogs(leaseCheck(tenantId, params.id, header), body) },
  }));

  mountEndpoint(router, PublicApi.attemptUpstream, async ({ tenantId, params, query, header }) => ({
    data: await service.upstream(leaseCheck(tenantId, params.id, header), query.asset, params.key, credentialOf(header)),
  }));

  mountEndpoint(router, PublicApi.attemptConnection, async ({ tenantId, params, body, header }) => ({
    data: await service.connection(leaseCheck(tenantId, params.id, header), body.asset, params.name),
  }));

  mountEndpoint(router, PublicApi.attemptStorage, async ({ tenantId, params, body, header }) => ({
    data: await service.storage(leaseCheck(tenantId, params.id, header), body.asset, credentialOf(header)),
  }));

  mountEndpoint(router, PublicApi.recordMaterialization, async ({ tenantId, params, body, header }) => ({
    status: 201,
    data: await service.recordMaterialization(leaseCheck(tenantId, params.id, header), params.key, body),
  }));

  mountEndpoint(router, PublicApi.finishAttempt, async ({ tenantId, params, body, header, cause }) => ({
    data: await service.finish(leaseCheck(tenantId, params.id, header), body, cause),
  }));

  mountEndpoint(router, PublicApi.releaseAttempt, async ({ tenantId, params, header }) => ({
    data: await service.release(leaseCheck(tenantId, params.id, header)),
  }));

  return router;
}
