import { Router } from 'express';
import { InternalApi, PublicApi, type PublishEventsResult, type RecordedEvent } from '@envengine/contracts';
import type { AuditLog } from '@envengine/event-log';
import { mountEndpoint } from '@envengine/service-kit';

/** The tenant's audit log (docs/design.md#events-audit-log-and-webhooks). */
export function eventsRouter(auditLog: AuditLog): Router {
  const router = Router();
  mountEndpoint(router, PublicApi.listEvents, async ({ tenantId, query, environments }) => ({ data: await auditLog.list(tenantId, query, environments) }));
  return router;
}

/** Where the other scopes' outbox relays hand their events to the audit log (`publish`: into it, then to the webhooks). */
export function eventsInternalRouter(publish: (events: RecordedEvent[]) => Promise<PublishEventsResult>): Router {
  const router = Router();
  mountEndpoint(router, InternalApi.publishEvents, async ({ body }) => ({ data: await publish(body.events) }));
  return router;
}
