import { describe, expect, it } from 'vitest';
import { loadPlacementConfig } from './config.ts';

const required = {
  MONGO_URL: 'mongodb://127.0.0.1:27017/?replicaSet=rs0',
  REDIS_URL: 'redis://placement:s3cret@10.0.0.5:6379',
  INTERNAL_CREDENTIAL: 'i'.repeat(40),
  RESOLVER_CREDENTIAL: 'r'.repeat(40),
  WEBHOOKS_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
};

describe('PUBLIC_REDIS_URL, the Redis every pool credential names', () => {
  it('defaults to the pool gate on the loopback, never to REDIS_URL', () => {
    expect(loadPlacementConfig(required).PUBLIC_REDIS_URL).toBe('redis://127.0.0.1:6380');
    expect(loadPlacementConfig({ ...required, POOL_GATE_HOST: '10.0.0.7', POOL_GATE_PORT: '7380' }).PUBLIC_REDIS_URL).toBe('redis://10.0.0.7:7380');
  });

  it('takes the address other hosts reach, rediss:// for TLS', () => {
    expect(loadPlacementConfig({ ...required, PUBLIC_REDIS_URL: 'rediss://queues.example.com:6380' }).PUBLIC_REDIS_URL).toBe('rediss://queues.example.com:6380');
  });

  it('refuses a URL with a credential, or that is not Redis, naming the setting', () => {
    expect(() => loadPlacementConfig({ ...required, PUBLIC_REDIS_URL: 'redis://default:pw@queues.example.com:6379' })).toThrow(/PUBLIC_REDIS_URL: must carry no credential/);
    expect(() => loadPlacementConfig({ ...required, PUBLIC_REDIS_URL: 'http://queues.example.com' })).toThrow(/PUBLIC_REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL/);
  });
});

describe('the webhooks settings', () => {
  it('keeps the master key only as a keyring, and reads the lists', () => {
    const config = loadPlacementConfig({ ...required, WEBHOOK_TARGETS_ALLOWED: '127.0.0.1, 10.9.0.0/16', WEBHOOK_DNS_SERVERS: '127.0.0.1:5353' });
    expect(config.webhooksKeyring.active.key).toEqual(Buffer.alloc(32, 7));
    expect(JSON.stringify(config)).not.toContain(required.WEBHOOKS_MASTER_KEY);
    expect(config.WEBHOOK_TARGETS_ALLOWED).toEqual(['127.0.0.1', '10.9.0.0/16']);
    expect(config.WEBHOOK_DNS_SERVERS).toEqual(['127.0.0.1:5353']);
    expect(loadPlacementConfig(required).WEBHOOK_TARGETS_ALLOWED).toEqual([]);
  });

  it('refuses a missing or malformed master key and an exception that is no address, naming the setting', () => {
    const { WEBHOOKS_MASTER_KEY: _key, ...withoutKey } = required;
    expect(() => loadPlacementConfig(withoutKey)).toThrow(/WEBHOOKS_MASTER_KEY: is required/);
    expect(() => loadPlacementConfig({ ...required, WEBHOOKS_MASTER_KEY: 'c2hvcnQ=' })).toThrow(/WEBHOOKS_MASTER_KEY: a master key must decode to 32 bytes/);
    expect(() => loadPlacementConfig({ ...required, WEBHOOK_TARGETS_ALLOWED: 'receiver.example.com' })).toThrow(/WEBHOOK_TARGETS_ALLOWED: "receiver.example.com" is not an IP address/);
  });
});
