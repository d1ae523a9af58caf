import { Schema, type Connection } from 'mongoose';
import type { WebhookDeliveryListQuery, WebhookDeliveryStatus } from '@envengine/contracts';
import { duplicatesOfInsert } from '@envengine/service-kit';
import { TenantScopedModel, type TenantFilter } from '@envengine/tenant-data';

export interface DeliveryAttemptDocument {
  at: Date;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
}

/** One event to one webhook: the body is fixed when it is made, so every retry sends the same bytes. */
export interface WebhookDeliveryDocument {
  _id: string;
  tenant_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  environment: string | null;
  /** The webhook's deliveries of one environment, sent in order (`<webhook id>/<environment name>`). */
  stream_id: string;
  body: string;
  status: WebhookDeliveryStatus;
  attempts: DeliveryAttemptDocument[];
  next_attempt_at: Date | null;
  created_at: Date;
}

/** A stream's generation: the queue job that may work on it now is `<stream id>#<generation>`. */
export interface WebhookStreamDocument {
  _id: string;
  tenant_id: string;
  generation: number;
}

const DELIVERY_LOG_KEPT_SECONDS = 30 * 86_400;

const deliverySchema = new Schema<WebhookDeliveryDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    webhook_id: { type: String, required: true },
    event_id: { type: String, required: true },
    event_type: { type: String, required: true },
    environment: { type: String, default: null },
    stream_id: { type: String, required: true },
    body: { type: String, required: true },
    status: { type: String, required: true },
    attempts: { type: [{ _id: false, at: Date, status_code: Number, latency_ms: Number, error: String }], default: [] },
    next_attempt_at: { type: Date, default: null },
    created_at: { type: Date, required: true },
  },
  { versionKey: false, collection: 'webhook_deliveries' },
);
// An event goes to a webhook once, however often its batch is published.
deliverySchema.index({ webhook_id: 1, event_id: 1 }, { unique: true });
deliverySchema.index({ tenant_id: 1, webhook_id: 1, _id: -1 });
// A stream's next delivery: its oldest pending one.
deliverySchema.index({ tenant_id: 1, stream_id: 1, status: 1, _id: 1 });
// The delivery log is kept 30 days (a pending delivery is long done by then: the retries span a day).
deliverySchema.index({ created_at: 1 }, { expireAfterSeconds: DELIVERY_LOG_KEPT_SECONDS });
// The sweep's pending deliveries of every tenant (a stream whose queue job was lost).
deliverySchema.index({ status: 1, next_attempt_at: 1 }, { partialFilterExpression: { status: 'pending' } });

const streamSchema = new Schema<WebhookStreamDocument>(
  {
    _id: { type: String, required: true },
    tenant_id: { type: String, required: true },
    generation: { type: Number, required: true },
  },
  { versionKey: false, collection: 'webhook_streams' },
);
streamSchema.index({ tenant_id: 1, _id: 1 });

export function streamIdOf(webhookId: string, environment: string | null): string {
  return `${webhookId}/${environment ?? ''}`;
}

/** The webhooks' deliveries and the streams that order them. */
export class WebhookDeliveryRepository {
  private readonly deliveries: TenantScopedModel<WebhookDeliveryDocument>;
  private readonly streams: TenantScopedModel<WebhookStreamDocument>;

  constructor(connection: Connection) {
    this.deliveries = TenantScopedModel.of(connection, 'WebhookDelivery', deliverySchema);
    this.streams = TenantScopedModel.of(connection, 'WebhookStream', streamSchema);
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([this.deliveries.ensureIndexes(), this.streams.ensureIndexes()]);
  }

  /** Stores new deliveries; one already stored for its webhook and event is left as it is. */
  async insertNew(deliveries: ReadonlyArray<Omit<WebhookDeliveryDocument, 'status' | 'attempts' | 'next_attempt_at'>>): Promise<void> {
    if (deliveries.length === 0) return;
    try {
      await this.deliveries.insertManyOwned(deliveries.map(({ tenant_id, ...doc }) => ({ tenantId: tenant_id, doc: { ...doc, status: 'pending', attempts: [], next_attempt_at: null } })));
    } catch (error) {
      if (duplicatesOfInsert(error) === undefined) throw error;
    }
  }

  /** The stream's current generation (0 for a new one). */
  async generation(tenantId: string, streamId: string): Promise<number> {
    const stream = await this.streams.findOneAndUpdate(tenantId, { _id: streamId }, { $setOnInsert: { generation: 0 } }, { upsert: true });
    return stream!.generation;
  }

  /** Ends a generation: its job has found nothing to send. False when it had ended already. */
  async endGeneration(tenantId: string, streamId: string, generation: number): Promise<boolean> {
    return (await this.streams.updateOne(tenantId, { _id: streamId, generation }, { $inc: { generation: 1 } })).modified === 1;
  }

  /** The stream's oldest pending deliveries, in order. */
  nextPending(tenantId: string, streamId: string, limit: number): Promise<WebhookDeliveryDocument[]> {
    return this.deliveries.find(tenantId, { stream_id: streamId, status: 'pending' }, { sort: { _id: 1 }, limit });
  }

  async hasPending(tenantId: string, streamId: string): Promise<boolean> {
    return (await this.deliveries.count(tenantId, { stream_id: streamId, status: 'pending' }, { limit: 1 })) > 0;
  }

  /** Records an attempt and what follows it, if the delivery is still pending (a repeat after a crash changes nothing). */
  async recordAttempt(tenantId: string, id: string, attempt: DeliveryAttemptDocument, next: { status: WebhookDeliveryStatus; nextAttemptAt: Date | null }): Promise<boolean> {
    const result = await this.deliveries.updateOne(tenantId, { _id: id, status: 'pending' }, { $push: { attempts: attempt }, $set: { status: next.status, next_attempt_at: next.nextAttemptAt } });
    return result.modified === 1;
  }

  /** Marks a webhook's pending deliveries skipped (it was disabled or deleted); how many. */
  skipPending(tenantId: string, webhookId: string, filter: TenantFilter<WebhookDeliveryDocument> = {}): Promise<number> {
    return this.deliveries.updateMany(tenantId, { ...filter, webhook_id: webhookId, status: 'pending' }, { $set: { status: 'skipped', next_attempt_at: null } });
  }

  /** Streams, of every tenant, with a delivery pending and due (not waiting for a retry): the sweep re-offers their jobs. */
  async dueStreams(now: Date, limit: number): Promise<Array<{ tenant_id: string; stream_id: string }>> {
    const rows = await this.deliveries.findAcrossTenants(
      { status: 'pending', $or: [{ next_attempt_at: null }, { next_attempt_at: { $lte: now } }] },
      { projection: { tenant_id: 1, stream_id: 1 }, limit },
    );
    const streams = new Map(rows.map((row) => [`${row.tenant_id} ${row.stream_id}`, { tenant_id: row.tenant_id, stream_id: row.stream_id }]));
    return [...streams.values()];
  }

  list(tenantId: string, webhookId: string, query: WebhookDeliveryListQuery): Promise<WebhookDeliveryDocument[]> {
    const filter: TenantFilter<WebhookDeliveryDocument> = { webhook_id: webhookId };
    if (query.status) filter.status = query.status;
    if (query.cursor) filter._id = { $lt: query.cursor };
    return this.deliveries.find(tenantId, filter, { sort: { _id: -1 }, limit: query.limit, projection: { body: 0 } });
  }
}
