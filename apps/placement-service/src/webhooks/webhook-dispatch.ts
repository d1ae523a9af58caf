import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import { WebhookStreamJob, webhookWants, type EngineEvent, type RecordedEvent } from '@envengine/contracts';
import type { RedisConnection } from '@envengine/redis-connections';
import type { MasterKeyring } from '@envengine/sealed-values';
import { newId } from '@envengine/resource-ids';
import { ATTEMPT_QUEUE_PREFIX } from '@envengine/attempt-queues';
import { delayAfterFailure, type RetrySchedule } from './retry-schedule.ts';
import { streamIdOf, type WebhookDeliveryDocument, type WebhookDeliveryRepository } from './webhook-delivery.repository.ts';
import type { WebhookDocument, WebhookRepository } from './webhook.repository.ts';
import type { WebhookSender } from './webhook-sender.ts';
import { openSigningSecret } from './webhook-signing.ts';

/**
 * The webhooks' own queue (`envengine:{webhooks}:…`, in braces: one Redis Cluster slot):
 * one job per stream, a webhook's deliveries of one environment, which its job sends in
 * order, one at a time, waiting out each failure's back-off before the next.
 */
const WEBHOOK_QUEUE = '{webhooks}';
/** Streams the sweep re-offers at once. */
const SWEEP_BATCH = 500;
/**
 * How long one job sends a stream's backlog before it goes to the back of the queue, so that
 * a long backlog (or a slow receiver) takes its turn with the other streams, not a worker slot.
 */
const STREAM_TURN_MS = 2_000;
/** Deliveries of a stream read at once (in order), with its webhook read once for them. */
const DELIVERY_BATCH = 25;

export interface WebhookDispatchOptions {
  retry: RetrySchedule;
  concurrency: number;
}

export interface WebhookAttemptMetrics {
  webhookAttempts: { inc(labels: { outcome: 'delivered' | 'failed' | 'gave_up' | 'refused' }): void };
}

/** The body a receiver gets: the Standard Webhooks payload shape, with the event as `data`. */
function deliveryBody(event: EngineEvent): string {
  return JSON.stringify({ type: event.type, timestamp: event.time, data: event });
}

/** The event as `GET /events` shows it, from a relay's record. */
function publicEvent(event: RecordedEvent): EngineEvent {
  return { id: event.id, type: event.type, time: event.time, environment: event.environment?.name ?? null, subject: event.subject, actor: event.actor, request_id: event.request_id, data: event.data } as EngineEvent;
}

/**
 * A `webhook.test` tries its webhook whatever its state: it goes to it disabled too, and its
 * failure never disables it (one tests a webhook to fix it before enabling it).
 */
const isTest = (type: string) => type === 'webhook.test';

/** Which of the tenant's webhooks an event goes to. */
export function webhooksFor(event: RecordedEvent, webhooks: readonly WebhookDocument[]): WebhookDocument[] {
  if (isTest(event.type)) return webhooks.filter((webhook) => webhook._id === event.subject.id);
  const time = new Date(event.time);
  return webhooks.filter(
    (webhook) =>
      webhook.enabled &&
      // Events from its creation on, but for its own creation's.
      webhook.created_at <= time &&
      !(event.type === 'webhook.created' && event.subject.id === webhook._id) &&
      (webhook.environment === null || webhook.environment === event.environment?.name) &&
      webhookWants(webhook.events, event.type),
  );
}

/**
 * Turns published events into deliveries and works the deliveries off the queue. Both run
 * in the placement-service, beside the audit log they follow.
 */
export class WebhookDispatch {
  private readonly queue: Queue;
  private worker: Worker | undefined;

  constructor(
    private readonly connection: RedisConnection,
    private readonly webhooks: WebhookRepository,
    private readonly deliveries: WebhookDeliveryRepository,
    private readonly sender: WebhookSender,
    private readonly keyring: MasterKeyring,
    private readonly options: WebhookDispatchOptions,
    private readonly metrics: WebhookAttemptMetrics,
    private readonly log: Logger,
  ) {
    this.queue = new Queue(WEBHOOK_QUEUE, { connection, prefix: ATTEMPT_QUEUE_PREFIX });
    this.queue.on('error', (error: Error) => log.warn({ err: error.message }, 'webhook queue error'));
  }

  /**
   * Makes the deliveries of a published batch, once per webhook and event however often the
   * batch comes, and offers their streams to the queue. An offer that fails (Redis away) is
   * made again by the sweep: the deliveries are stored first.
   */
  async fanOut(events: readonly RecordedEvent[]): Promise<void> {
    const tenants = [...new Set(events.map((event) => event.tenant_id))];
    const webhooksByTenant = new Map(await Promise.all(tenants.map(async (tenant) => [tenant, await this.webhooks.listForDelivery(tenant)] as const)));
    const made: Array<Omit<WebhookDeliveryDocument, 'status' | 'attempts' | 'next_attempt_at'>> = [];
    const now = new Date();
    for (const event of events) {
      for (const webhook of webhooksFor(event, webhooksByTenant.get(event.tenant_id) ?? [])) {
        const environment = event.environment?.name ?? null;
        made.push({
          _id: newId('whd'),
          tenant_id: event.tenant_id,
          webhook_id: webhook._id,
          event_id: event.id,
          event_type: event.type,
          environment,
          stream_id: streamIdOf(webhook._id, environment),
          body: deliveryBody(publicEvent(event)),
          created_at: now,
        });
      }
    }
    if (made.length === 0) return;
    await this.deliveries.insertNew(made);
    const streams = new Map(made.map((delivery) => [`${delivery.tenant_id} ${delivery.stream_id}`, delivery]));
    await Promise.all([...streams.values()].map((delivery) => this.offer(delivery.tenant_id, delivery.stream_id).catch((error: Error) => this.log.warn({ err: error.message, stream: delivery.stream_id }, 'could not offer a webhook stream to its queue; the sweep does'))));
  }

  /** Adds the stream's job of its current generation; BullMQ ignores the add while that job exists. */
  private async offer(tenantId: string, streamId: string): Promise<void> {
    const generation = await this.deliveries.generation(tenantId, streamId);
    const data: WebhookStreamJob = { tenant_id: tenantId, stream_id: streamId, generation };
    await this.queue.add('stream', data, { jobId: `${streamId}#${generation}`, attempts: 1, removeOnComplete: true, removeOnFail: true });
  }

  /** Re-offers streams whose job was lost (a failed job, Redis flushed): each sweep of the delivery sweep. */
  async sweep(): Promise<void> {
    for (const stream of await this.deliveries.dueStreams(new Date(), SWEEP_BATCH)) await this.offer(stream.tenant_id, stream.stream_id);
  }

  start(): void {
    this.worker = new Worker(WEBHOOK_QUEUE, (job: Job, token?: string) => this.work(job, token), {
      connection: this.connection,
      prefix: ATTEMPT_QUEUE_PREFIX,
      concurrency: this.options.concurrency,
    });
    this.worker.on('error', (error: Error) => this.log.warn({ err: error.message }, 'webhook worker error'));
    this.worker.on('failed', (job, error) => this.log.warn({ job_id: job?.id, err: error.message }, 'webhook stream job failed; the sweep offers it again'));
  }

  async stop(): Promise<void> {
    await this.worker?.close();
    await this.queue.close();
    this.sender.close();
  }

  /** Sends a stream's pending deliveries in order; a failure's back-off delays the job, and the rest of the stream with it. */
  private async work(job: Job, token: string | undefined): Promise<void> {
    const { tenant_id: tenantId, stream_id: streamId, generation } = WebhookStreamJob.parse(job.data);
    // Only the current generation's job works a stream: one at a time, so in order.
    if ((await this.deliveries.generation(tenantId, streamId)) !== generation) return;
    const turnEnds = Date.now() + STREAM_TURN_MS;
    for (;;) {
      const batch = await this.deliveries.nextPending(tenantId, streamId, DELIVERY_BATCH);
      if (batch.length === 0) {
        // Nothing left: the next delivery's offer makes the next generation's job. One made
        // between the look and the end of this generation is offered here.
        if (await this.deliveries.endGeneration(tenantId, streamId, generation)) {
          if (await this.deliveries.hasPending(tenantId, streamId)) await this.offer(tenantId, streamId);
        }
        return;
      }
      // A stream is one webhook's: read once per batch, so a change (a PATCH, a rotation, a
      // delete) applies from the next batch on.
      const webhook = await this.webhooks.find(tenantId, batch[0]!.webhook_id);
      const secrets = webhook ? this.signingSecrets(webhook) : [];
      for (const delivery of batch) {
        if (Date.now() > turnEnds) return this.waitUntil(job, token, Date.now());
        if (delivery.next_attempt_at && delivery.next_attempt_at.getTime() > Date.now()) return this.waitUntil(job, token, delivery.next_attempt_at.getTime());
        if (!webhook || (!webhook.enabled && !isTest(delivery.event_type))) {
          await this.deliveries.skipPending(tenantId, delivery.webhook_id, { _id: delivery._id });
          continue;
        }
        const at = new Date();
        const outcome = await this.sender.send({ url: webhook.url, messageId: delivery.event_id, body: delivery.body, secrets });
        const attempt = { at, status_code: outcome.statusCode, latency_ms: outcome.latencyMs, error: outcome.error };
        if (outcome.ok) {
          await this.deliveries.recordAttempt(tenantId, delivery._id, attempt, { status: 'delivered', nextAttemptAt: null });
          this.metrics.webhookAttempts.inc({ outcome: 'delivered' });
          continue;
        }
        const delay = delayAfterFailure(this.options.retry, delivery.attempts.length + 1);
        if (delay === undefined) {
          await this.deliveries.recordAttempt(tenantId, delivery._id, attempt, { status: 'failed', nextAttemptAt: null });
          this.metrics.webhookAttempts.inc({ outcome: 'gave_up' });
          if (!isTest(delivery.event_type) && (await this.webhooks.disableFailing(tenantId, webhook._id, delivery._id, outcome.error ?? 'failed'))) {
            this.log.warn({ tenant_id: tenantId, webhook_id: webhook._id, delivery_id: delivery._id }, 'webhook disabled: its delivery failed for the retry window');
            await this.deliveries.skipPending(tenantId, webhook._id);
          }
          // The rest of the batch was skipped with it, or is read again.
          break;
        }
        const nextAttemptAt = new Date(Date.now() + delay);
        await this.deliveries.recordAttempt(tenantId, delivery._id, attempt, { status: 'pending', nextAttemptAt });
        this.metrics.webhookAttempts.inc({ outcome: outcome.refused ? 'refused' : 'failed' });
        return this.waitUntil(job, token, nextAttemptAt.getTime());
      }
    }
  }

  /** Puts the stream's job back until `time`: the stream waits with its delivery. */
  private async waitUntil(job: Job, token: string | undefined, time: number): Promise<never> {
    await job.moveToDelayed(time, token);
    throw new DelayedError();
  }

  /** The webhook's secrets that sign now: the current one, and a previous one until it expires. */
  private signingSecrets(webhook: WebhookDocument): string[] {
    const now = Date.now();
    return webhook.secrets
      .filter((secret) => secret.expires_at === null || secret.expires_at === undefined || secret.expires_at.getTime() > now)
      .map((secret) => openSigningSecret(secret.sealed, webhook._id, secret.created_at, this.keyring));
  }
}
