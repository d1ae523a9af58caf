import type { CreateWebhookRequest, UpdateWebhookRequest, Webhook, WebhookCreated, WebhookDelivery, WebhookDeliveryListQuery, WebhookSecretRotated } from '@envengine/contracts';
import type { EngineNetworkGuard } from '@envengine/egress-rules';
import type { EventCause, EventOutbox } from '@envengine/event-log';
import type { MasterKeyring } from '@envengine/sealed-values';
import { newId } from '@envengine/resource-ids';
import { ApiError, notFound } from '@envengine/service-kit';
import { inTransaction } from '@envengine/tenant-data';
import type { Connection } from 'mongoose';
import type { WebhookDeliveryDocument, WebhookDeliveryRepository } from './webhook-delivery.repository.ts';
import { newSigningSecret, sealSigningSecret } from './webhook-signing.ts';
import type { WebhookDocument, WebhookRepository } from './webhook.repository.ts';

export interface WebhooksServiceOptions {
  /** How long a rotated-out secret keeps signing beside the new one. */
  secretOverlapMs: number;
}

/** `/api/v1/webhooks` (docs/design.md#events-audit-log-and-webhooks). */
export class WebhooksService {
  constructor(
    private readonly connection: Connection,
    private readonly webhooks: WebhookRepository,
    private readonly deliveries: WebhookDeliveryRepository,
    private readonly outbox: EventOutbox,
    private readonly guard: EngineNetworkGuard,
    private readonly keyring: MasterKeyring,
    private readonly options: WebhooksServiceOptions,
  ) {}

  async create(tenantId: string, body: CreateWebhookRequest, cause: EventCause): Promise<WebhookCreated> {
    await this.checkTarget(body.url);
    const id = newId('whk');
    const now = new Date();
    const secret = newSigningSecret();
    const doc = await this.webhooks.insert(
      tenantId,
      {
        _id: id,
        url: body.url,
        events: [...new Set(body.events)],
        environment: body.environment ?? null,
        description: body.description ?? null,
        enabled: true,
        disabled_reason: null,
        disabled_at: null,
        secrets: [{ sealed: sealSigningSecret(secret, id, now, this.keyring), created_at: now, expires_at: null }],
        created_at: now,
        updated_at: now,
      },
      cause,
    );
    return { ...toWebhook(doc), secret };
  }

  async list(tenantId: string): Promise<Webhook[]> {
    return (await this.webhooks.list(tenantId)).map(toWebhook);
  }

  async get(tenantId: string, id: string): Promise<Webhook> {
    return toWebhook(await this.require(tenantId, id));
  }

  async update(tenantId: string, id: string, body: UpdateWebhookRequest, cause: EventCause): Promise<Webhook> {
    if (body.url !== undefined) await this.checkTarget(body.url);
    const change = { ...body, ...(body.events ? { events: [...new Set(body.events)] } : {}) };
    const updated = await this.webhooks.update(tenantId, id, change, cause);
    if (!updated) throw notFound(`Webhook "${id}"`);
    return toWebhook(updated);
  }

  async delete(tenantId: string, id: string, cause: EventCause): Promise<{ id: string }> {
    const deleted = await this.webhooks.delete(tenantId, id, cause);
    if (!deleted) throw notFound(`Webhook "${id}"`);
    await this.deliveries.skipPending(tenantId, id);
    return { id };
  }

  async rotateSecret(tenantId: string, id: string, cause: EventCause): Promise<WebhookSecretRotated> {
    const now = new Date();
    const secret = newSigningSecret();
    const previousExpiresAt = new Date(now.getTime() + this.options.secretOverlapMs);
    const rotated = await this.webhooks.rotateSecret(tenantId, id, { sealed: sealSigningSecret(secret, id, now, this.keyring), created_at: now, expires_at: null }, previousExpiresAt, cause);
    if (!rotated) throw notFound(`Webhook "${id}"`);
    return { id, secret, previous_secret_expires_at: previousExpiresAt.toISOString() };
  }

  /** Records a `webhook.test` event: it reaches this webhook alone, through the relay and the queue every event takes. */
  async test(tenantId: string, id: string, cause: EventCause): Promise<{ event_id: string }> {
    return inTransaction(this.connection, async (session) => {
      const webhook = await this.webhooks.findIn(tenantId, id, session);
      if (!webhook) throw notFound(`Webhook "${id}"`);
      const eventId = await this.outbox.record(tenantId, { type: 'webhook.test', environment: null, subject: { kind: 'webhook', id }, cause, data: {} }, session);
      return { event_id: eventId };
    });
  }

  async listDeliveries(tenantId: string, id: string, query: WebhookDeliveryListQuery): Promise<WebhookDelivery[]> {
    await this.require(tenantId, id);
    return (await this.deliveries.list(tenantId, id, query)).map(toDelivery);
  }

  private async require(tenantId: string, id: string): Promise<WebhookDocument> {
    const webhook = await this.webhooks.find(tenantId, id);
    if (!webhook) throw notFound(`Webhook "${id}"`);
    return webhook;
  }

  /** A target on the engine's own network is refused now; every delivery checks it again on the address resolved then. */
  private async checkTarget(url: string): Promise<void> {
    const host = new URL(url).hostname;
    let refusal: string | null;
    try {
      refusal = await this.guard.refusalOfHost(host);
    } catch (error) {
      throw new ApiError('webhook_target_refused', `The webhook's host "${host}" could not be resolved (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`, {
        details: [{ path: 'url', message: 'has a host that does not resolve' }],
      });
    }
    if (refusal) {
      throw new ApiError('webhook_target_refused', `The webhook's target is refused: ${refusal}.`, { details: [{ path: 'url', message: 'is on the engine\'s own network' }] });
    }
  }
}

function toWebhook(doc: WebhookDocument): Webhook {
  const previous = doc.secrets[1];
  return {
    id: doc._id,
    url: doc.url,
    events: doc.events,
    environment: doc.environment,
    description: doc.description,
    enabled: doc.enabled,
    disabled_reason: doc.disabled_reason,
    disabled_at: doc.disabled_at?.toISOString() ?? null,
    created_at: doc.created_at.toISOString(),
    updated_at: doc.updated_at.toISOString(),
    previous_secret_expires_at: previous?.expires_at && previous.expires_at.getTime() > Date.now() ? previous.expires_at.toISOString() : null,
  };
}

function toDelivery(doc: Omit<WebhookDeliveryDocument, 'body'>): WebhookDelivery {
  return {
    id: doc._id,
    webhook_id: doc.webhook_id,
    event_id: doc.event_id,
    event_type: doc.event_type,
    environment: doc.environment,
    status: doc.status,
    attempts: doc.attempts.map((attempt) => ({ at: attempt.at.toISOString(), status_code: attempt.status_code ?? null, latency_ms: attempt.latency_ms, error: attempt.error ?? null })),
    next_attempt_at: doc.next_attempt_at?.toISOString() ?? null,
    created_at: doc.created_at.toISOString(),
  };
}
