import { escapeControlCharacters } from '@envengine/terminal-text';
import { CreateWebhookRequest, PublicApi, UpdateWebhookRequest, WebhookDeliveryListQuery, type Webhook, type WebhookDelivery } from '@envengine/contracts';
import { flagOption, integerOption, listOption, requiredOption, stringOption, type CommandSpec } from '../command-line.ts';
import { usageError } from '../exit-codes.ts';
import { requestBody } from './request-body.ts';

function webhookRow(webhook: Webhook): Array<string | boolean> {
  return [
    webhook.id,
    escapeControlCharacters(webhook.url),
    webhook.events.join(','),
    escapeControlCharacters(webhook.environment ?? '*'),
    webhook.enabled ? 'enabled' : `disabled (${webhook.disabled_reason})`,
  ];
}

function deliveryRow(delivery: WebhookDelivery): string[] {
  const last = delivery.attempts.at(-1);
  return [
    delivery.created_at,
    delivery.event_type,
    escapeControlCharacters(delivery.environment ?? '-'),
    delivery.status,
    String(delivery.attempts.length),
    last ? `${last.status_code ?? '-'} in ${last.latency_ms} ms${last.error ? `: ${escapeControlCharacters(last.error)}` : ''}` : '-',
    delivery.next_attempt_at ?? '-',
  ];
}

const ID = { args: 'ID', positionals: { min: 1, max: 1 } } as const;

/** `webhooks enable|disable ID`: one PATCH of `enabled`. */
function toggle(word: 'enable' | 'disable', summary: string, enabled: boolean): CommandSpec {
  return {
    path: ['webhooks', word],
    summary,
    ...ID,
    async run(ctx, { positionals }) {
      const { data } = await (await ctx.api()).request(PublicApi.updateWebhook, { params: { id: positionals[0]! }, body: requestBody(UpdateWebhookRequest, { enabled }) });
      ctx.out.data(data, () => `${enabled ? 'Enabled' : 'Disabled'} ${data.id}.`);
    },
  };
}

export const webhookCommands: CommandSpec[] = [
  {
    path: ['webhooks', 'create'],
    summary: 'send events to a URL of yours, signed (Standard Webhooks); the signing secret is shown once',
    options: {
      target: { type: 'string', value: 'URL', description: 'where each event is POSTed (http or https)' },
      event: { type: 'string', multiple: true, value: 'TYPE', description: 'an event type (run.failed), a prefix (run.*) or *; repeat for more' },
      env: { type: 'string', short: 'e', value: 'NAME', description: "only this environment's events (default: every environment's)" },
      description: { type: 'string', value: 'TEXT', description: 'what it is for' },
    },
    async run(ctx, { values }) {
      const events = listOption(values, 'event');
      if (events.length === 0) throw usageError('envctl webhooks create needs at least one --event (a type, a prefix such as run.*, or *)');
      const environment = stringOption(values, 'env');
      const description = stringOption(values, 'description');
      const body = requestBody(CreateWebhookRequest, {
        url: requiredOption(values, 'target', 'webhooks create'),
        events,
        ...(environment ? { environment } : {}),
        ...(description ? { description } : {}),
      });
      const { data } = await (await ctx.api()).request(PublicApi.createWebhook, { body });
      ctx.out.info('The signing secret is shown once; give it to your receiver to verify each delivery.');
      ctx.out.data(data, () => ctx.out.fields([['id', data.id], ['url', data.url], ['events', data.events.join(', ')], ['environment', data.environment ?? '(all)'], ['secret', data.secret]]));
    },
  },
  {
    path: ['webhooks', 'list'],
    summary: 'your webhooks (never their secrets)',
    async run(ctx) {
      const { data } = await (await ctx.api()).request(PublicApi.listWebhooks, {});
      ctx.out.data(data, () => ctx.out.table(['WEBHOOK', 'URL', 'EVENTS', 'ENVIRONMENT', 'STATE'], data.map(webhookRow)));
    },
  },
  toggle('enable', 'enable a webhook again (one disabled after a day of failures too)', true),
  toggle('disable', "stop a webhook's deliveries until it is enabled again", false),
  {
    path: ['webhooks', 'delete'],
    summary: 'delete a webhook (its deliveries not yet sent are skipped)',
    ...ID,
    async run(ctx, { positionals }) {
      const { data } = await (await ctx.api()).request(PublicApi.deleteWebhook, { params: { id: positionals[0]! } });
      ctx.out.data(data, () => `Deleted ${data.id}.`);
    },
  },
  {
    path: ['webhooks', 'rotate-secret'],
    summary: 'give a webhook a new signing secret (shown once); the previous one signs too for a day',
    ...ID,
    async run(ctx, { positionals }) {
      const { data } = await (await ctx.api()).request(PublicApi.rotateWebhookSecret, { params: { id: positionals[0]! } });
      ctx.out.info(`The new secret is shown once; the previous one signs beside it until ${data.previous_secret_expires_at}.`);
      ctx.out.data(data, () => data.secret);
    },
  },
  {
    path: ['webhooks', 'test'],
    summary: 'send a webhook.test event to this webhook alone',
    ...ID,
    async run(ctx, { positionals }) {
      const { data } = await (await ctx.api()).request(PublicApi.testWebhook, { params: { id: positionals[0]! } });
      ctx.out.data(data, () => `Sent event ${data.event_id}; envctl webhooks deliveries ${positionals[0]!} shows how it went.`);
    },
  },
  {
    path: ['webhooks', 'deliveries'],
    summary: "a webhook's deliveries, newest first, with each one's last attempt",
    ...ID,
    options: {
      status: { type: 'string', value: 'STATUS', description: 'only pending, delivered, failed or skipped ones' },
      limit: { type: 'string', value: 'N', description: 'at most N (1-200, default 50)' },
      failed: { type: 'boolean', description: 'only failed ones (as --status failed)' },
    },
    async run(ctx, { positionals, values }) {
      const status = flagOption(values, 'failed') ? 'failed' : stringOption(values, 'status');
      const query = requestBody(WebhookDeliveryListQuery, { ...(status ? { status } : {}), limit: integerOption(values, 'limit', { min: 1, max: 200 }) ?? 50 });
      const { data } = await (await ctx.api()).request(PublicApi.listWebhookDeliveries, { params: { id: positionals[0]! }, query });
      ctx.out.data(data, () => ctx.out.table(['CREATED', 'EVENT', 'ENVIRONMENT', 'STATUS', 'TRIES', 'LAST ATTEMPT', 'NEXT'], data.map(deliveryRow)));
    },
  },
];
