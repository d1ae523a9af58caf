import { z } from 'zod';
import { EVENT_TYPE_PREFIXES, EVENT_TYPES } from './events.ts';

/** A webhook's id: `whk_…`. */
export const WebhookId = z.string().regex(/^whk_[0-9a-z]{26}$/, { message: 'must be a webhook id (whk_…)' });

/**
 * What a webhook is sent: an event type (`run.failed`), every type under a prefix
 * (`run.*`), or `*` for every event.
 */
export const WebhookEventFilter = z.enum(['*', ...EVENT_TYPES, ...EVENT_TYPE_PREFIXES] as [string, ...string[]], {
  message: `must be an event type (${EVENT_TYPES.join(', ')}), a prefix of them followed by .* (${EVENT_TYPE_PREFIXES.join(', ')}), or *`,
});

/** Does an event of `type` match one of a webhook's filters? */
export function webhookWants(filters: readonly string[], type: string): boolean {
  return filters.some((filter) => filter === '*' || filter === type || (filter.endsWith('.*') && type.startsWith(filter.slice(0, -1))));
}

const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const PORT = '(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3})';
/**
 * `http(s)://`, a host name (its last label begins with a letter) or an IPv4 address, an
 * optional port, then a path and query: no user, password or fragment. Exactly what a URL
 * parser takes as such, so the document's pattern and the server agree.
 */
const WEBHOOK_URL_PATTERN = new RegExp(`^https?://(?:${OCTET}(?:\\.${OCTET}){3}|(?:[A-Za-z0-9-]+\\.)*[A-Za-z][A-Za-z0-9-]*)(?::${PORT})?(?:[/?][^#\\s]*)?$`);

/**
 * A webhook's target. Whether its address is one the engine sends to is checked by the
 * service, on create and at every delivery, on the address its name resolves to then.
 */
export const WebhookUrl = z
  .string()
  .max(2000)
  .regex(WEBHOOK_URL_PATTERN, { message: 'must be an http(s) URL of a host name or IPv4 address, with no user, password or fragment' })
  .refine((url) => URL.canParse(url), { message: 'must be a URL' });

export const CreateWebhookRequest = z.strictObject({
  url: WebhookUrl,
  events: z.array(WebhookEventFilter).min(1).max(50),
  /** Only this environment's events (by name); all of the tenant's when absent. */
  environment: z.string().min(1).max(100).optional(),
  description: z.string().max(500).optional(),
});
export type CreateWebhookRequest = z.infer<typeof CreateWebhookRequest>;

export const UpdateWebhookRequest = z
  .strictObject({
    url: WebhookUrl.optional(),
    events: z.array(WebhookEventFilter).min(1).max(50).optional(),
    /** `true` enables a webhook again (one disabled after a day of failures too); `false` stops its deliveries. */
    enabled: z.boolean().optional(),
    description: z.string().max(500).optional(),
  })
  .refine((body) => Object.keys(body).length > 0, { message: 'names at least one field to change (url, events, enabled, description)' })
  .meta({ minProperties: 1 });
export type UpdateWebhookRequest = z.infer<typeof UpdateWebhookRequest>;

// Any id is looked up: one that is malformed is as unknown as a missing one (404, docs/design.md#wire-conventions).
export const WebhookPathParams = z.object({ id: z.string().min(1).max(100) });

export const Webhook = z.object({
  id: WebhookId,
  url: z.string(),
  events: z.array(z.string()),
  environment: z.string().nullable(),
  description: z.string().nullable(),
  enabled: z.boolean(),
  /** Why it is disabled: `request` (a PATCH) or `failing` (a delivery failed for a day); null when enabled. */
  disabled_reason: z.enum(['request', 'failing']).nullable(),
  disabled_at: z.iso.datetime().nullable(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
  /** Until when the previous signing secret still signs too (after a rotation); null otherwise. */
  previous_secret_expires_at: z.iso.datetime().nullable(),
});
export type Webhook = z.infer<typeof Webhook>;

/**
 * A Standard Webhooks signing secret (`whsec_` and base64 of 32 bytes), shown once: on
 * create and on rotation.
 */
export const WebhookSecret = z.string().regex(/^whsec_[A-Za-z0-9+/]{43}=$/);

export const WebhookCreated = Webhook.extend({ secret: WebhookSecret });
export type WebhookCreated = z.infer<typeof WebhookCreated>;

export const WebhookSecretRotated = z.object({
  id: WebhookId,
  secret: WebhookSecret,
  /** Deliveries carry a signature by the previous secret too until then. */
  previous_secret_expires_at: z.iso.datetime(),
});
export type WebhookSecretRotated = z.infer<typeof WebhookSecretRotated>;

export const WebhookDeleted = z.object({ id: WebhookId });

export const WebhookTestSent = z.object({
  /** The `webhook.test` event that goes to this webhook alone, through the same queue as every event. */
  event_id: z.string(),
});

export const WebhookDeliveryStatus = z.enum(['pending', 'delivered', 'failed', 'skipped']);
export type WebhookDeliveryStatus = z.infer<typeof WebhookDeliveryStatus>;

export const WebhookDeliveryAttempt = z.object({
  at: z.iso.datetime(),
  /** The receiver's HTTP status; null when none came (refused address, timeout, connection error). */
  status_code: z.number().int().nullable(),
  latency_ms: z.number().int().nonnegative(),
  /** Why the attempt failed; null for a 2xx. */
  error: z.string().nullable(),
});

export const WebhookDelivery = z.object({
  id: z.string(),
  webhook_id: WebhookId,
  event_id: z.string(),
  event_type: z.string(),
  environment: z.string().nullable(),
  /**
   * `pending` (to send, or to send again at `next_attempt_at`), `delivered` (a 2xx),
   * `failed` (a day of failures: the webhook was disabled) or `skipped` (the webhook was
   * disabled or deleted before it went).
   */
  status: WebhookDeliveryStatus,
  attempts: z.array(WebhookDeliveryAttempt),
  next_attempt_at: z.iso.datetime().nullable(),
  created_at: z.iso.datetime(),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const WebhookDeliveryListQuery = z.strictObject({
  status: WebhookDeliveryStatus.optional(),
  /** Paging, newest first: the id of the last delivery of the previous page. */
  cursor: z.string().regex(/^whd_[0-9a-z]{26}$/, { message: 'must be a delivery id (whd_…)' }).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
export type WebhookDeliveryListQuery = z.infer<typeof WebhookDeliveryListQuery>;

/** The webhook delivery queue's job: a stream (one webhook's deliveries of one environment) to work through, in order. */
export const WebhookStreamJob = z.object({
  tenant_id: z.string(),
  stream_id: z.string(),
  generation: z.number().int().nonnegative(),
});
export type WebhookStreamJob = z.infer<typeof WebhookStreamJob>;
