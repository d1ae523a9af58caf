import { Schema, type Connection, type Model } from 'mongoose';
import { EngineEvent, EnvironmentAccess, type EventListQuery, type PublishEventsResult, type RecordedEvent } from '@envengine/contracts';
import { duplicatesOfInsert, modelFor } from '@envengine/service-kit';
import { eventDocumentFields, type EventDocument } from './event-document.ts';
import { TenantScopedModel, type TenantFilter } from '@envengine/tenant-data';

/** An event as the audit log keeps it: every scope's, published by their relays. */
type AuditEventDocument = EventDocument;

const RETENTION_INDEX = 'time_retention';

const auditEventSchema = new Schema<AuditEventDocument>(
  eventDocumentFields,
  { versionKey: false, collection: 'events', minimize: false },
);
// One index per filter of GET /events, each ending in the id the pages are cut by.
auditEventSchema.index({ tenant_id: 1, _id: -1 });
auditEventSchema.index({ tenant_id: 1, 'environment.name': 1, _id: -1 });
auditEventSchema.index({ tenant_id: 1, type: 1, _id: -1 });
auditEventSchema.index({ tenant_id: 1, 'subject.id': 1, _id: -1 });

/**
 * The tenant's audit log: every scope's events, stored once per id whatever number of
 * times a relay sends them, kept for the operator's retention (a TTL index on the event's
 * time) and never removed with their environment, so that its deletion stays visible.
 */
export class AuditLog {
  private readonly model: Model<AuditEventDocument>;
  private readonly events: TenantScopedModel<AuditEventDocument>;

  constructor(connection: Connection) {
    this.model = modelFor(connection, 'AuditEvent', auditEventSchema);
    this.events = new TenantScopedModel(this.model);
  }

  /** The indexes, and the retention index set to `retentionDays` (changed in place when the setting changed). */
  async ensureIndexes(retentionDays: number): Promise<void> {
    await this.events.ensureIndexes();
    const seconds = Math.round(retentionDays * 86_400);
    const existing = (await this.model.collection.indexes()).find((index) => index.name === RETENTION_INDEX);
    if (existing?.expireAfterSeconds === seconds) return;
    // Made again rather than changed with collMod, which a scope's user (readWrite) may not run.
    if (existing) {
      await this.model.collection.dropIndex(RETENTION_INDEX).catch((error: { codeName?: string }) => {
        if (error.codeName !== 'IndexNotFound') throw error;
      });
    }
    await this.model.collection.createIndex({ time: 1 }, { name: RETENTION_INDEX, expireAfterSeconds: seconds });
  }

  /** Stores a relay's batch; an event already stored (a batch sent again) is counted, not stored twice. */
  async store(batch: readonly RecordedEvent[]): Promise<PublishEventsResult> {
    try {
      await this.events.insertManyOwned(batch.map((event) => ({ tenantId: event.tenant_id, doc: auditDocument(event) })));
      return { stored: batch.length, duplicates: 0 };
    } catch (error) {
      const duplicates = duplicatesOfInsert(error);
      if (duplicates === undefined) throw error;
      return { stored: batch.length - duplicates, duplicates };
    }
  }

  /**
   * The tenant's events matching `query`: newest first, or oldest first after `query.after`.
   * `environments`: a caller limited to environments sees only their events (none of the
   * tenant-wide ones: pool credentials, tokens, webhooks).
   */
  async list(tenantId: string, query: EventListQuery, environments: EnvironmentAccess = EnvironmentAccess.ALL): Promise<EngineEvent[]> {
    const filter: TenantFilter<AuditEventDocument> = {};
    if (query.environment !== undefined) filter['environment.name'] = query.environment;
    if (environments.restricted) {
      const { names, prefixes } = environments.filter;
      // Anchored prefixes: each a range of the index, not a scan.
      const visible = [...(names.length > 0 ? [{ 'environment.name': { $in: names } }] : []), ...prefixes.map((prefix) => ({ 'environment.name': { $regex: `^${escapeRegex(prefix)}` } }))];
      filter.$and = [{ $or: visible.length > 0 ? visible : [{ _id: { $exists: false } }] }];
    }
    if (query.type !== undefined) {
      filter.type = query.type.endsWith('.*') ? { $regex: `^${query.type.slice(0, -2).replaceAll('.', '\\.')}\\.` } : query.type;
    }
    if (query.subject !== undefined) filter['subject.id'] = query.subject;
    if (query.since !== undefined || query.until !== undefined) {
      filter.time = { ...(query.since ? { $gte: new Date(query.since) } : {}), ...(query.until ? { $lt: new Date(query.until) } : {}) };
    }
    const ids = { ...(query.cursor ? { $lt: query.cursor } : {}), ...(query.after ? { $gt: query.after } : {}) };
    if (Object.keys(ids).length > 0) filter._id = ids;
    const rows = await this.events.find(tenantId, filter, { sort: { _id: query.after ? 1 : -1 }, limit: query.limit });
    return rows.map(publicEvent);
  }
}

function auditDocument(event: RecordedEvent): Omit<AuditEventDocument, 'tenant_id'> {
  return {
    _id: event.id,
    type: event.type,
    time: new Date(event.time),
    environment: event.environment,
    subject: event.subject,
    actor: event.actor,
    request_id: event.request_id,
    data: event.data,
  };
}

function publicEvent(row: AuditEventDocument): EngineEvent {
  return EngineEvent.parse({
    id: row._id,
    type: row.type,
    time: row.time.toISOString(),
    environment: row.environment?.name ?? null,
    subject: row.subject,
    actor: row.actor,
    request_id: row.request_id,
    data: row.data,
  });
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
