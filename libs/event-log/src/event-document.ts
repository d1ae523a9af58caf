import { Schema } from 'mongoose';
import type { EventActor, EventSubject, EventType } from '@envengine/contracts';

/** An event as stored: in a scope's outbox until published, then in the audit log. */
export interface EventDocument {
  _id: string;
  tenant_id: string;
  type: EventType;
  time: Date;
  environment: { id: string; name: string } | null;
  subject: EventSubject;
  actor: EventActor;
  request_id: string | null;
  data: Record<string, unknown>;
}

/** The fields of `EventDocument`, as both stores' schemas declare them. */
export const eventDocumentFields = {
  _id: { type: String, required: true },
  tenant_id: { type: String, required: true },
  type: { type: String, required: true },
  time: { type: Date, required: true },
  environment: { type: new Schema({ id: String, name: String }, { _id: false }), default: null },
  subject: { type: new Schema({ kind: String, id: String }, { _id: false }), required: true },
  actor: { type: String, required: true },
  request_id: { type: String, default: null },
  data: { type: Schema.Types.Mixed, required: true },
} as const;
