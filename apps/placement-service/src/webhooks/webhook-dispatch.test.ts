import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '@envengine/contracts';
import { webhooksFor } from './webhook-dispatch.ts';
import type { WebhookDocument } from './webhook.repository.ts';

const created = new Date('2026-11-27T10:00:00.000Z');
const webhook = (id: string, fields: Partial<WebhookDocument> = {}): WebhookDocument => ({
  _id: id,
  tenant_id: 'ten_a',
  url: 'https://hooks.example.com/',
  events: ['*'],
  environment: null,
  description: null,
  enabled: true,
  disabled_reason: null,
  disabled_at: null,
  secrets: [],
  created_at: created,
  updated_at: created,
  ...fields,
});
const event = (type: string, fields: Partial<RecordedEvent> = {}): RecordedEvent => ({
  id: 'evt_1',
  tenant_id: 'ten_a',
  type: type as RecordedEvent['type'],
  time: '2026-11-27T10:00:01.000Z',
  environment: { id: 'env_1', name: 'prod' },
  subject: { kind: 'environment', id: 'env_1' },
  actor: 'engine',
  request_id: null,
  data: {},
  ...fields,
});
const ids = (list: WebhookDocument[]) => list.map((entry) => entry._id);

describe('which webhooks an event goes to', () => {
  it('by type, prefix or *, and by environment', () => {
    const hooks = [
      webhook('all'),
      webhook('runs', { events: ['run.*'] }),
      webhook('failed', { events: ['run.failed'] }),
      webhook('prod', { environment: 'prod' }),
      webhook('dev', { environment: 'dev' }),
    ];
    expect(ids(webhooksFor(event('run.failed'), hooks))).toEqual(['all', 'runs', 'failed', 'prod']);
    expect(ids(webhooksFor(event('run.succeeded'), hooks))).toEqual(['all', 'runs', 'prod']);
    // An event of no environment goes only to webhooks of every environment.
    expect(ids(webhooksFor(event('pool_credential.created', { environment: null }), hooks))).toEqual(['all']);
  });

  it('not to a disabled webhook, nor to one made after the event, nor its own creation', () => {
    const hooks = [webhook('off', { enabled: false }), webhook('later', { created_at: new Date('2026-11-27T11:00:00.000Z') }), webhook('self')];
    expect(ids(webhooksFor(event('environment.updated'), hooks))).toEqual(['self']);
    expect(ids(webhooksFor(event('webhook.created', { environment: null, subject: { kind: 'webhook', id: 'self' } }), hooks))).toEqual([]);
  });

  it('a test to its webhook alone, disabled or not, whatever its filters', () => {
    const hooks = [webhook('all'), webhook('off', { enabled: false, events: ['run.failed'] })];
    expect(ids(webhooksFor(event('webhook.test', { environment: null, subject: { kind: 'webhook', id: 'off' } }), hooks))).toEqual(['off']);
  });
});
