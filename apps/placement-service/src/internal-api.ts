import { Router } from 'express';
import type { InternalMount } from '@envengine/service-kit';
import type { EnvironmentLifecycle } from './environment-lifecycle/environment-lifecycle.ts';
import { environmentsInternalRouter } from './environment-lifecycle/environments.internal-routes.ts';
import type { MaterializationPurge } from './environment-lifecycle/materialization-purge.ts';
import type { EnvironmentRepository } from './environments/environment.repository.ts';
import type { PublishEventsResult, RecordedEvent } from '@envengine/contracts';
import { eventsInternalRouter } from './events/events.routes.ts';
import { poolInternalRouter } from './pool/pool.routes.ts';
import type { PoolService } from './pool/pool.service.ts';
import type { ScheduleTicker } from './schedules/schedule-ticker.ts';
import { scheduleTicksRouter, schedulesInternalRouter } from './schedules/schedules.routes.ts';
import type { SchedulesService } from './schedules/schedules.service.ts';

export interface PlacementInternalApiDeps {
  environments: EnvironmentRepository;
  lifecycle: EnvironmentLifecycle;
  purge: MaterializationPurge;
  pool: PoolService;
  schedules: SchedulesService;
  ticker: ScheduleTicker;
  /** Into the audit log, then to the webhooks. */
  publishEvents: (events: RecordedEvent[]) => Promise<PublishEventsResult>;
}

/** The placement scope's part of `/internal/v1` (InternalApi's `service: 'placement'` routes). */
export function placementInternalApi(deps: PlacementInternalApiDeps): InternalMount[] {
  const internal = Router();
  internal.use(environmentsInternalRouter(deps.environments, deps.lifecycle, deps.purge));
  internal.use(poolInternalRouter(deps.pool));
  internal.use(schedulesInternalRouter(deps.schedules));
  internal.use(scheduleTicksRouter(deps.ticker));
  internal.use(eventsInternalRouter(deps.publishEvents));
  // Same credential as the gateway's, but under a prefix the gateway never forwards to.
  return [{ credential: 'internal', routes: internal }];
}
