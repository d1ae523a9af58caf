import { Router } from 'express';
import type { EnvironmentLifecycle } from './environment-lifecycle/environment-lifecycle.ts';
import type { EnvironmentRepository } from './environments/environment.repository.ts';
import type { AuditLog } from '@envengine/event-log';
import { eventsRouter } from './events/events.routes.ts';
import { environmentsRouter } from './environment-lifecycle/environments.routes.ts';
import type { MaterializationReader } from './outputs/materialization-reader.ts';
import { outputsRouter } from './outputs/outputs.routes.ts';
import { poolRouter } from './pool/pool.routes.ts';
import type { PoolService } from './pool/pool.service.ts';
import { quotasRouter } from './quotas/quotas.routes.ts';
import type { QuotasService } from './quotas/quotas.service.ts';
import { runsRouter } from './runs/runs.routes.ts';
import type { RunsService } from './runs/runs.service.ts';
import { schedulesRouter } from './schedules/schedules.routes.ts';
import type { SchedulesService } from './schedules/schedules.service.ts';
import { webhooksRouter } from './webhooks/webhooks.routes.ts';
import type { WebhooksService } from './webhooks/webhooks.service.ts';
import { workerApiRouter } from './worker-api/worker-api.routes.ts';
import type { WorkerApiService } from './worker-api/worker-api.service.ts';

export interface PlacementPublicApiDeps {
  environments: EnvironmentRepository;
  lifecycle: EnvironmentLifecycle;
  storageRoot: string;
  runs: RunsService;
  schedules: SchedulesService;
  pool: PoolService;
  quotas: QuotasService;
  workerApi: WorkerApiService;
  outputs: MaterializationReader;
  auditLog: AuditLog;
  webhooks: WebhooksService;
}

/** The placement scope's part of `/api/v1` (its routes are PublicApi's `service: 'placement'` endpoints). */
export function placementPublicApi(deps: PlacementPublicApiDeps): Router {
  const api = Router();
  api.use(environmentsRouter(deps.environments, deps.lifecycle, deps.storageRoot));
  api.use(runsRouter(deps.runs));
  api.use(schedulesRouter(deps.schedules));
  api.use(poolRouter(deps.pool));
  api.use(quotasRouter(deps.quotas));
  api.use(workerApiRouter(deps.workerApi));
  api.use(outputsRouter(deps.outputs));
  api.use(eventsRouter(deps.auditLog));
  api.use(webhooksRouter(deps.webhooks));
  return api;
}
