import { Router } from 'express';
import { PublicApi } from '@envengine/contracts';
import { mountEndpoint } from '@envengine/service-kit';
import type { WebhooksService } from './webhooks.service.ts';

/** `/api/v1/webhooks…` (docs/design.md#events-audit-log-and-webhooks). */
export function webhooksRouter(webhooks: WebhooksService): Router {
  const router = Router();
  mountEndpoint(router, PublicApi.createWebhook, async ({ tenantId, body, cause }) => ({ status: 201, data: await webhooks.create(tenantId, body, cause) }));
  mountEndpoint(router, PublicApi.listWebhooks, async ({ tenantId }) => ({ data: await webhooks.list(tenantId) }));
  mountEndpoint(router, PublicApi.getWebhook, async ({ tenantId, params }) => ({ data: await webhooks.get(tenantId, params.id) }));
  mountEndpoint(router, PublicApi.updateWebhook, async ({ tenantId, params, body, cause }) => ({ data: await webhooks.update(tenantId, params.id, body, cause) }));
  mountEndpoint(router, PublicApi.deleteWebhook, async ({ tenantId, params, cause }) => ({ data: await webhooks.delete(tenantId, params.id, cause) }));
  mountEndpoint(router, PublicApi.rotateWebhookSecret, async ({ tenantId, params, cause }) => ({ data: await webhooks.rotateSecret(tenantId, params.id, cause) }));
  mountEndpoint(router, PublicApi.testWebhook, async ({ tenantId, params, cause }) => ({ status: 202, data: await webhooks.test(tenantId, params.id, cause) }));
  mountEndpoint(router, PublicApi.listWebhookDeliveries, async ({ tenantId, params, query }) => ({ data: await webhooks.listDeliveries(tenantId, params.id, query) }));
  return router;
}
