import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from './config.ts';

const REQUIRED = { MONGO_URL: 'mongodb://127.0.0.1:27017', REDIS_URL: 'redis://127.0.0.1:6379', INTERNAL_CREDENTIAL: 'x'.repeat(32) };

describe('the gateway settings of its upstream capacity', () => {
  it("gives a tenant a quarter of each pool unless told, and the bodies' minimum rate", () => {
    const config = loadGatewayConfig(REQUIRED);
    expect(config).toMatchObject({
      UPSTREAM_CONNECTIONS: 64,
      UPSTREAM_STREAM_CONNECTIONS: 16,
      UPSTREAM_TENANT_IN_FLIGHT: 16,
      UPSTREAM_TENANT_STREAMS: 4,
      UPSTREAM_TENANT_WAIT_MS: 5000,
      BODY_MIN_BYTES_PER_SECOND: 500,
      BODY_RATE_WINDOW_MS: 20_000,
    });
    expect(loadGatewayConfig({ ...REQUIRED, UPSTREAM_CONNECTIONS: '8', UPSTREAM_STREAM_CONNECTIONS: '2' })).toMatchObject({ UPSTREAM_TENANT_IN_FLIGHT: 2, UPSTREAM_TENANT_STREAMS: 1 });
    expect(loadGatewayConfig({ ...REQUIRED, UPSTREAM_TENANT_IN_FLIGHT: '40' })).toMatchObject({ UPSTREAM_TENANT_IN_FLIGHT: 40 });
  });

  it('refuses a share that is the whole pool', () => {
    expect(() => loadGatewayConfig({ ...REQUIRED, UPSTREAM_TENANT_IN_FLIGHT: '64' })).toThrow(/UPSTREAM_TENANT_IN_FLIGHT: must be below UPSTREAM_CONNECTIONS \(64\)/);
    expect(() => loadGatewayConfig({ ...REQUIRED, UPSTREAM_STREAM_CONNECTIONS: '4', UPSTREAM_TENANT_STREAMS: '5' })).toThrow(/UPSTREAM_TENANT_STREAMS: must be below/);
  });
});
