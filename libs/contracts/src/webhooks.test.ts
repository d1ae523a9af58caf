import { describe, expect, it } from 'vitest';
import { UpdateWebhookRequest, WebhookEventFilter, WebhookUrl, webhookWants } from './webhooks.ts';

describe('webhook contracts', () => {
  it('takes http(s) URLs of a host name or an IPv4 address, and nothing a URL parser reads otherwise', () => {
    for (const url of ['http://127.0.0.1:9/x', 'https://hooks.example.com/a?b=1', 'http://localhost:8080', 'https://a-b.example/x/y?z']) expect(WebhookUrl.safeParse(url).success, url).toBe(true);
    // Numeric hosts a parser reads as IPv4 (or refuses), IPv6 literals, credentials, fragments, other schemes, bad ports.
    for (const url of ['http://0', 'http://1.2.3.4.5', 'http://a.1', 'http://999.1.1.1', 'http://[::1]/', 'http://u:p@x.com/', 'http://x.com/#f', 'ftp://x.com', 'http://x.com:99999', 'http://x.com:0', 'http:/x.com', '']) {
      expect(WebhookUrl.safeParse(url).success, url).toBe(false);
    }
  });

  it('filters by type, prefix or *', () => {
    expect(webhookWants(['run.*'], 'run.failed')).toBe(true);
    expect(webhookWants(['run.*'], 'runner.x')).toBe(false);
    expect(webhookWants(['run.failed'], 'run.succeeded')).toBe(false);
    expect(webhookWants(['*'], 'secret.deleted')).toBe(true);
    expect(WebhookEventFilter.safeParse('run.exploded').success).toBe(false);
    expect(WebhookEventFilter.safeParse('webhook.*').success).toBe(true);
  });

  it('a PATCH names at least one field', () => {
    expect(UpdateWebhookRequest.safeParse({}).success).toBe(false);
    expect(UpdateWebhookRequest.safeParse({ enabled: false }).success).toBe(true);
  });
});
