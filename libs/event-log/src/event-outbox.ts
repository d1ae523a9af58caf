import { Schema, type ClientSession, type Connection } from 'mongoose';
import { eventPayloadSchema, type EventActor, type EventData, type EventSubject, type EventType, type RecordedEvent } from '@envengine/contracts';
import { eventDocumentFields, type EventDocument } from './event-document.ts';
import { newId } from '@envengine/resource-ids';
import { TenantScopedModel } from '@envengine/tenant-data';

/** An event row of a scope's outbox: written in its change's transaction, `pending` until its relay has published it. */
export interface OutboxDocument extends EventDocument {
  /** Present (true) until published; the relay's index holds only these rows. */
  pending?: true;
  published_at: Date | null;
}

/** How long a published row stays in the outbox (for an operator reading what was sent). */
const PUBLISHED_KEPT_SECONDS = 3600;

const outboxSchema = new Schema<OutboxDocument>(
  {
    ...eventDocumentFields,
    pending: { type: Boolean },
    published_at: { type: Date, default: null },
  },
  { versionKey: false, collection: 'event_outbox', minimize: false },
);
// The relay reads the pending rows in id order; published ones leave the index.
outboxSchema.index({ pending: 1, _id: 1 }, { partialFilterExpression: { pending: { $exists: true } } });
outboxSchema.index({ published_at: 1 }, { expireAfterSeconds: PUBLISHED_KEPT_SECONDS });

/** Who asked for a change, as a service knows it from the request (or `engine` for its own work). */
export interface EventCause {
  actor: EventActor;
  requestId: string | null;
}

/** The cause of the engine's own changes: the reaper, a tear-down, a workflow. */
export const ENGINE_CAUSE: EventCause = { actor: 'engine', requestId: null };

/** The cause of what a schedule's tick made. */
export const SCHEDULE_CAUSE: EventCause = { actor: 'schedule', requestId: null };

export interface NewEvent<K extends EventType> {
  type: K;
  environment: { id: string; name: string } | null;
  subject: EventSubject;
  cause: EventCause;
  data: EventData<K>;
}

/**
 * A scope's transactional outbox: a change writes its event here in the change's own
 * transaction, so that an event exists exactly when its change committed; the scope's
 * `OutboxRelay` then publishes the rows, at least once, in order.
 */
export class EventOutbox {
  private readonly rows: TenantScopedModel<OutboxDocument>;
  private readonly committedListeners: Array<() => void> = [];

  constructor(connection: Connection) {
    this.rows = TenantScopedModel.of(connection, 'EventOutbox', outboxSchema);
  }

  ensureIndexes(): Promise<void> {
    return this.rows.ensureIndexes();
  }

  /** Called after each transaction that recorded events has ended (the relay looks at once). */
  onRecorded(listener: () => void): void {
    this.committedListeners.push(listener);
  }

  /** Writes an event in `session`'s transaction (the change's own). */
  /** Writes one event in `session`'s transaction; its id. */
  async record<K extends EventType>(tenantId: string, event: NewEvent<K>, session: ClientSession): Promise<string> {
    const [id] = await this.recordMany(tenantId, [event], session);
    return id!;
  }

  /** Writes several events of one tenant in `session`'s transaction, in this order; their ids. */
  async recordMany(tenantId: string, events: ReadonlyArray<NewEvent<EventType>>, session: ClientSession): Promise<string[]> {
    if (events.length === 0) return [];
    const now = Date.now();
    const rows = events.map((event) => outboxRow(event, now));
    await this.rows.insertManyOwned(
      rows.map((doc) => ({ tenantId, doc })),
      { session },
    );
    // After the session ends (committed, or aborted: then the relay finds nothing new).
    session.once('ended', () => {
      for (const listener of this.committedListeners) listener();
    });
    return rows.map((row) => row._id);
  }

  /** Pending rows of every tenant, oldest first (the relay's read). */
  pending(limit: number): Promise<OutboxDocument[]> {
    return this.rows.findAcrossTenants({ pending: true }, { sort: { _id: 1 }, limit });
  }

  /** Marks published rows, each under its own tenant. */
  async markPublished(rows: ReadonlyArray<Pick<OutboxDocument, '_id' | 'tenant_id'>>): Promise<void> {
    const byTenant = new Map<string, string[]>();
    for (const row of rows) byTenant.set(row.tenant_id, [...(byTenant.get(row.tenant_id) ?? []), row._id]);
    const now = new Date();
    await Promise.all(
      [...byTenant].map(([tenantId, ids]) =>
        this.rows.updateMany(tenantId, { _id: { $in: ids }, pending: true }, { $unset: { pending: 1 }, $set: { published_at: now } }),
      ),
    );
  }
}

function outboxRow<K extends EventType>(event: NewEvent<K>, now: number): Omit<OutboxDocument, 'tenant_id'> {
  // Checked here so that a payload off its contract fails the change's own transaction, not the relay.
  const data = eventPayloadSchema(event.type).parse(event.data) as Record<string, unknown>;
  return {
    _id: newId('evt', now),
    type: event.type,
    time: new Date(now),
    environment: event.environment ? { id: event.environment.id, name: event.environment.name } : null,
    subject: { kind: event.subject.kind, id: event.subject.id },
    actor: event.cause.actor,
    request_id: event.cause.requestId,
    data,
    pending: true,
    published_at: null,
  };
}

/** An outbox row as the audit log and webhooks receive it. */
export function recordedEvent(row: OutboxDocument): RecordedEvent {
  return {
    id: row._id,
    tenant_id: row.tenant_id,
    type: row.type,
    time: row.time.toISOString(),
    environment: row.environment,
    subject: row.subject,
    actor: row.actor,
    request_id: row.request_id,
    data: row.data,
  };
}
