import { Schema, type ClientSession, type Connection } from 'mongoose';
import type { QuotaLimits } from '@envengine/contracts';
import type { EventCause, EventOutbox } from '@envengine/event-log';
import { inTransaction, TenantScopedModel, type TenantQuotas } from '@envengine/tenant-data';
import { quotaExceeded } from '@envengine/service-kit';

/** A signing secret as stored: sealed (webhook-signing.ts), never readable from the row alone. */
export interface StoredSigningSecret {
  sealed: string;
  created_at: Date;
  /** When a replaced secret stops signing; null for the current one. */
  expires_at: Date | null;
}

export interface WebhookDocument {
  _id: string;
  tenant_id: string;
  url: string;
  events: string[];
  /** Only this environment's events (by name), or every one of the tenant's. */
  environment: string | null;
  description: string | null;
  enabled: boolean;
  disabled_reason: 'request' | 'failing' | null;
  disabled_at: Date | null;
  /** The current secret first; a replaced one after it until it expires. */
  secrets: StoredSigningSecret[];
  created_at: Date;
  updated_at: Date;
}

const webhookSchema = new Schema<WebhookDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    url: { type: String, required: true },
    events: { type: [String], required: true },
    environment: { type: String, default: null },
    description: { type: String, default: null },
    enabled: { type: Boolean, required: true },
    disabled_reason: { type: String, default: null },
    disabled_at: { type: Date, default: null },
    secrets: { type: [{ _id: false, sealed: String, created_at: Date, expires_at: Date }], required: true },
    created_at: { type: Date, required: true },
    updated_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'webhooks' },
);
webhookSchema.index({ tenant_id: 1, enabled: 1, _id: 1 });

export type WebhookChange = Partial<Pick<WebhookDocument, 'url' | 'events' | 'description' | 'enabled'>>;

/** The tenant's webhooks: their targets, filters and sealed signing secrets. */
export class WebhookRepository {
  private readonly webhooks: TenantScopedModel<WebhookDocument>;

  constructor(
    private readonly connection: Connection,
    private readonly quotas: TenantQuotas,
    private readonly outbox: EventOutbox,
  ) {
    this.webhooks = TenantScopedModel.of(connection, 'Webhook', webhookSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.webhooks.ensureIndexes();
  }

  /** Stores a new webhook within the tenant's webhooks quota, with its event, in one transaction. */
  insert(tenantId: string, doc: Omit<WebhookDocument, 'tenant_id'>, cause: EventCause): Promise<WebhookDocument> {
    return this.quotas.admission(tenantId, async (session, limits: QuotaLimits) => {
      const held = await this.webhooks.count(tenantId, {}, { session, limit: limits.webhooks });
      if (held >= limits.webhooks) throw quotaExceeded('webhooks', limits.webhooks, `You have ${held} webhooks already.`);
      const stored = await this.webhooks.insert(tenantId, doc, { session });
      await this.outbox.record(tenantId, { type: 'webhook.created', environment: null, subject: { kind: 'webhook', id: doc._id }, cause, data: { url: doc.url, events: doc.events } }, session);
      return stored;
    });
  }

  list(tenantId: string): Promise<WebhookDocument[]> {
    return this.webhooks.find(tenantId, {}, { sort: { _id: 1 } });
  }

  count(tenantId: string): Promise<number> {
    return this.webhooks.count(tenantId, {});
  }

  find(tenantId: string, id: string): Promise<WebhookDocument | null> {
    return this.webhooks.findOne(tenantId, { _id: id });
  }

  /** The webhook, read in `session`'s transaction. */
  findIn(tenantId: string, id: string, session: ClientSession): Promise<WebhookDocument | null> {
    return this.webhooks.findOne(tenantId, { _id: id }, { session, projection: { secrets: 0 } });
  }

  /** The tenant's webhooks an event may go to: the enabled ones, and disabled ones for their tests. */
  listForDelivery(tenantId: string): Promise<WebhookDocument[]> {
    return this.webhooks.find(tenantId, {}, { projection: { secrets: 0 } });
  }

  /**
   * Applies a change; the fields that differ are recorded in one `webhook.updated` event.
   * Enabling clears the reason it was disabled for. Null when the tenant has no such webhook.
   */
  update(tenantId: string, id: string, change: WebhookChange, cause: EventCause): Promise<WebhookDocument | null> {
    return inTransaction(this.connection, async (session) => {
      const current = await this.webhooks.findOne(tenantId, { _id: id }, { session });
      if (!current) return null;
      const fields = (Object.keys(change) as Array<keyof WebhookChange>).filter((field) => JSON.stringify(change[field]) !== JSON.stringify(current[field] ?? null));
      if (fields.length === 0) return current;
      const now = new Date();
      const set: Record<string, unknown> = { ...change, updated_at: now };
      if (change.enabled === true && !current.enabled) Object.assign(set, { disabled_reason: null, disabled_at: null });
      if (change.enabled === false && current.enabled) Object.assign(set, { disabled_reason: 'request', disabled_at: now });
      // The precondition is the row read in this transaction: a concurrent change aborts one of them.
      const updated = await this.webhooks.findOneAndUpdate(tenantId, { _id: id, updated_at: current.updated_at }, { $set: set }, { session });
      if (!updated) throw new Error(`webhook ${id} changed while it was being updated`);
      await this.outbox.record(tenantId, { type: 'webhook.updated', environment: null, subject: { kind: 'webhook', id }, cause, data: { fields } }, session);
      return updated;
    });
  }

  /** Removes the webhook with its event; null when the tenant has none of that id. */
  delete(tenantId: string, id: string, cause: EventCause): Promise<WebhookDocument | null> {
    return inTransaction(this.connection, async (session) => {
      const deleted = await this.webhooks.findOneAndDelete(tenantId, { _id: id }, { session });
      if (!deleted) return null;
      await this.outbox.record(tenantId, { type: 'webhook.deleted', environment: null, subject: { kind: 'webhook', id }, cause, data: {} }, session);
      return deleted;
    });
  }

  /** Puts a new current secret first; the previous one signs until `previousExpiresAt`, older ones are dropped. */
  rotateSecret(tenantId: string, id: string, secret: StoredSigningSecret, previousExpiresAt: Date, cause: EventCause): Promise<WebhookDocument | null> {
    return inTransaction(this.connection, async (session) => {
      const current = await this.webhooks.findOne(tenantId, { _id: id }, { session });
      if (!current) return null;
      const previous = { ...current.secrets[0]!, expires_at: previousExpiresAt };
      const updated = await this.webhooks.findOneAndUpdate(
        tenantId,
        { _id: id, updated_at: current.updated_at },
        { $set: { secrets: [secret, previous], updated_at: secret.created_at } },
        { session },
      );
      if (!updated) throw new Error(`webhook ${id} changed while its secret was being rotated`);
      await this.outbox.record(tenantId, { type: 'webhook.secret_rotated', environment: null, subject: { kind: 'webhook', id }, cause, data: { previous_secret_expires_at: previousExpiresAt.toISOString() } }, session);
      return updated;
    });
  }

  /**
   * Disables a webhook whose delivery failed for the retry window, with its event; false
   * when it was already disabled or deleted (another replica, or the tenant, was first).
   */
  disableFailing(tenantId: string, id: string, deliveryId: string, lastError: string): Promise<boolean> {
    return inTransaction(this.connection, async (session) => {
      const now = new Date();
      const disabled = await this.webhooks.findOneAndUpdate(
        tenantId,
        { _id: id, enabled: true },
        { $set: { enabled: false, disabled_reason: 'failing', disabled_at: now, updated_at: now } },
        { session },
      );
      if (!disabled) return false;
      await this.outbox.record(
        tenantId,
        { type: 'webhook.disabled', environment: null, subject: { kind: 'webhook', id }, cause: { actor: 'engine', requestId: null }, data: { reason: 'failing', delivery_id: deliveryId, last_error: lastError.slice(0, 500) } },
        session,
      );
      return true;
    });
  }
}
