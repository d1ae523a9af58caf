import { z } from 'zod';
import { Role, Scope } from './access.ts';
import { Executor } from './environment.ts';
import { RunTrigger } from './runs.ts';
import { EventActor } from './event-actor.ts';

export { EventActor };

export const EventSubjectKind = z.enum(['run', 'attempt', 'environment', 'pool_credential', 'secret', 'binding', 'deployment', 'materialization', 'schedule', 'token', 'webhook']);
export type EventSubjectKind = z.infer<typeof EventSubjectKind>;

/** What an event is about: the resource's kind and its id (a secret and a binding: their name). */
export const EventSubject = z.object({ kind: EventSubjectKind, id: z.string() });
export type EventSubject = z.infer<typeof EventSubject>;

const RunEnded = { trigger: RunTrigger, attempt: z.number().int().positive() };

/**
 * Each event type with its payload. A payload is small and never carries a secret's value,
 * a request body or a tenant's log line: what happened, to what, and the few facts a
 * receiver acts on.
 */
const EVENT_PAYLOADS = {
  'run.queued': z.object({ trigger: RunTrigger, job: z.string().nullable(), deployment_id: z.string(), waiting_for_slot: z.boolean() }),
  'run.started': z.object({ attempt: z.number().int().positive(), executor: Executor, worker: z.string().nullable() }),
  'run.succeeded': z.object(RunEnded),
  'run.failed': z.object({ ...RunEnded, error: z.string() }),
  'run.canceled': z.object({ trigger: RunTrigger, reason: z.enum(['request', 'environment_deleted']) }),
  'attempt.lost': z.object({ run_id: z.string(), attempt: z.number().int().positive(), executor: Executor, worker: z.string().nullable(), error: z.string() }),
  'attempt.retried': z.object({ run_id: z.string(), attempt: z.number().int().positive(), executor: Executor, previous_error: z.string() }),
  'environment.created': z.object({ executor: Executor, preview: z.boolean() }),
  'environment.updated': z.object({ fields: z.array(z.string()) }),
  'environment.deleted': z.object({ purge_data: z.boolean(), expired: z.boolean() }),
  // A preview's TTL lapses within the hour (at once when less was left): the instant it will.
  'environment.expiring': z.object({ expires_at: z.string() }),
  'placement.changed': z.object({ executor: Executor, previous: Executor }),
  'schedules.paused': z.object({}),
  'schedules.resumed': z.object({}),
  // A tick of a schedule (subject: its name) that made no run: paused, its last run still going, or a quota full.
  'schedule.tick_skipped': z.object({ tick: z.string(), reason: z.enum(['paused', 'overlap', 'quota']), running_run_id: z.string().nullable() }),
  'pool_credential.created': z.object({ label: z.string().nullable() }),
  'pool_credential.revoked': z.object({ label: z.string().nullable() }),
  // The gateway's API tokens, made and revoked by an operator (subject id: the token's id), never the token or its hash.
  'token.created': z.object({
    label: z.string(),
    // Its grant (absent on events recorded before scopes).
    scopes: z.array(Scope).optional(),
    role: Role.nullable().optional(),
    environments: z.array(z.string()).nullable().optional(),
    expires_at: z.string().nullable().optional(),
  }),
  'token.revoked': z.object({ label: z.string() }),
  // The secrets scope: a secret by name (subject id) and version, never its value.
  'secret.created': z.object({ version: z.number().int().positive() }),
  'secret.rotated': z.object({ version: z.number().int().positive() }),
  /** The version that was current when the secret was deleted (every version is destroyed with it). */
  'secret.deleted': z.object({ version: z.number().int().positive() }),
  'binding.set': z.object({ mode: z.string(), created: z.boolean() }),
  'binding.deleted': z.object({}),
  // The deployment scope: a deployment by id (subject id).
  'deployment.ready': z.object({ bundle_ref: z.string(), warnings: z.number().int().nonnegative() }),
  'deployment.failed': z.object({ bundle_ref: z.string(), error_codes: z.array(z.string()) }),
  'deployment.activated': z.object({ previous_deployment_id: z.string().nullable(), checked: z.number().int().nonnegative(), quarantined: z.array(z.string()) }),
  'materialization.quarantined': z.object({ asset: z.string(), deployment_id: z.string(), reason: z.string() }),
  // Webhooks (subject id: the webhook's id), never their secret.
  'webhook.created': z.object({ url: z.string(), events: z.array(z.string()) }),
  'webhook.updated': z.object({ fields: z.array(z.string()) }),
  'webhook.deleted': z.object({}),
  'webhook.secret_rotated': z.object({ previous_secret_expires_at: z.string() }),
  // A day of failed deliveries: the delivery that failed last, and its last error.
  'webhook.disabled': z.object({ reason: z.enum(['failing']), delivery_id: z.string(), last_error: z.string() }),
  // `POST /webhooks/:id/test`: delivered to that webhook alone, whatever its filters.
  'webhook.test': z.object({}),
} as const;

export type EventType = keyof typeof EVENT_PAYLOADS;
export const EVENT_TYPES = Object.keys(EVENT_PAYLOADS) as EventType[];
export const EventTypeName = z.enum(EVENT_TYPES as [EventType, ...EventType[]]);

/** An event's payload, by type. */
export type EventData<K extends EventType> = z.infer<(typeof EVENT_PAYLOADS)[K]>;

const EventId = z.string().regex(/^evt_[0-9a-z]{26}$/, { message: 'must be an event id (evt_…)' });

const eventFields = {
  id: EventId,
  time: z.iso.datetime(),
  /** The environment's name, or null for an event of none (a pool credential, an API token). */
  environment: z.string().nullable(),
  subject: EventSubject,
  actor: EventActor,
  /** The API request that caused it, when one did. */
  request_id: z.string().nullable(),
};

type EventVariant<K extends EventType> = z.ZodObject<typeof eventFields & { type: z.ZodLiteral<K>; data: (typeof EVENT_PAYLOADS)[K] }>;

function variantOf<K extends EventType>(type: K): EventVariant<K> {
  return z.object({ ...eventFields, type: z.literal(type), data: EVENT_PAYLOADS[type] }) as unknown as EventVariant<K>;
}

type EventFields = z.infer<z.ZodObject<typeof eventFields>>;
export type EngineEvent = { [K in EventType]: EventFields & { type: K; data: EventData<K> } }[EventType];

/** One change, as `GET /events` answers it and a webhook delivers it. */
export const EngineEvent = z.discriminatedUnion(
  'type',
  EVENT_TYPES.map((type) => variantOf(type)) as unknown as [EventVariant<EventType>, ...EventVariant<EventType>[]],
) as unknown as z.ZodType<EngineEvent>;

export const EVENT_TYPE_PREFIXES = [...new Set(EVENT_TYPES.map((type) => `${type.slice(0, type.indexOf('.'))}.*`))];

/** `type=run.failed` (one type) or `type=run.*` (every type under a prefix): an enum, so the document lists them. */
export const EventTypeFilter = z.enum([...EVENT_TYPES, ...EVENT_TYPE_PREFIXES] as [string, ...string[]], {
  message: `must be an event type (${EVENT_TYPES.join(', ')}) or a prefix of them followed by .* (${EVENT_TYPE_PREFIXES.join(', ')})`,
});

export const EventListQuery = z.strictObject({
  environment: z.string().min(1).max(100).optional(),
  type: EventTypeFilter.optional(),
  /** A subject's id: a run, an attempt, an environment (`env_…`), a pool credential, an API token (`tok_…`), a secret's or binding's name. */
  subject: z.string().min(1).max(200).optional(),
  since: z.iso.datetime().optional(),
  until: z.iso.datetime().optional(),
  /** Paging, newest first: the id of the last event of the previous page. */
  cursor: EventId.optional(),
  /** Following: only events after this id, oldest first (what `envctl events tail` asks). */
  after: EventId.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
export type EventListQuery = z.infer<typeof EventListQuery>;

/** An event as a scope records it (in the transaction of its change) and hands it to the audit log. */
export const RecordedEvent = z.object({
  id: EventId,
  tenant_id: z.string().min(1),
  type: EventTypeName,
  time: z.iso.datetime(),
  environment: z.object({ id: z.string(), name: z.string() }).nullable(),
  subject: EventSubject,
  actor: EventActor,
  request_id: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
});
export type RecordedEvent = z.infer<typeof RecordedEvent>;

/** A relay's batch to the audit log, in the order the scope recorded them. */
export const PublishEventsRequest = z.object({ events: z.array(RecordedEvent).min(1).max(500) });
export type PublishEventsRequest = z.infer<typeof PublishEventsRequest>;
export const PublishEventsResult = z.object({ stored: z.number().int().nonnegative(), duplicates: z.number().int().nonnegative() });
export type PublishEventsResult = z.infer<typeof PublishEventsResult>;

/** The payload schema of a type (for a scope checking what it records). */
export function eventPayloadSchema<K extends EventType>(type: K): (typeof EVENT_PAYLOADS)[K] {
  return EVENT_PAYLOADS[type];
}
