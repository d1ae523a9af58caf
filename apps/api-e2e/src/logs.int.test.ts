import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { createTenant, replicaLogFiles, until } from '@envengine/test-harness';

const stack = inject('stack');

describe('service logs', () => {
  it('are JSON lines that never carry a token or a request body', async () => {
    const tenant = await createTenant(stack, 'log-scan');
    const marker = `body-marker-${Date.now()}`;
    await tenant.api.post('/environments', { name: 'logged', storage_prefix: `s3://lake/${marker}`, executor: 'local' });
    await tenant.api.post('/environments', { name: 'bad name', storage_prefix: `s3://lake/${marker}`, executor: 'local' });
    // The last request carries a known request id: once its line is in the gateway's and
    // the placement-service's logs, everything those processes logged before it is there too.
    const lastRequestId = `last-${Date.now()}`;
    await tenant.api.get('/environments/logged', { headers: { 'X-Request-Id': lastRequestId } });
    const logDir = join(stack.dataDir, 'logs');
    const read = (file: string) => readFileSync(join(logDir, file), 'utf8');
    // The gateway the client calls is the first; the placement-service replica it went to, any.
    const placementLogs = replicaLogFiles(stack, 'placement-service');
    const carrying = await until(
      async () => ['gateway.log', ...placementLogs].filter((file) => read(file).includes(lastRequestId)),
      (found) => found.length === 2,
      10_000,
    );
    // The scan sees this test's lines: the path it requested is there, the body it sent is not.
    expect(carrying[0]).toBe('gateway.log');
    expect(read('gateway.log')).toContain('/environments/logged');
    expect(placementLogs).toContain(carrying[1]);

    // Every replica of every deployable (the servers' own logs, Temporal's among them, are not JSON).
    const serviceLogs = (Object.keys(stack.replicaUrls) as Array<keyof typeof stack.replicaUrls>).flatMap((service) => replicaLogFiles(stack, service));
    expect(serviceLogs.every((file) => readdirSync(logDir).includes(file))).toBe(true);
    expect(serviceLogs.length).toBeGreaterThanOrEqual(6);
    let requestLines = 0;
    for (const file of serviceLogs) {
      const text = readFileSync(join(logDir, file), 'utf8');
      expect(text, file).not.toContain(tenant.token);
      expect(text, file).not.toContain(tenant.token.slice(4));
      expect(text, file).not.toContain(marker);
      for (const line of text.split('\n').filter(Boolean)) {
        const entry = JSON.parse(line) as { level: string; service: string; msg: string };
        expect(entry.service).toBeTruthy();
        if (entry.msg === 'request') requestLines += 1;
      }
    }
    expect(requestLines).toBeGreaterThan(0);
  });
});
