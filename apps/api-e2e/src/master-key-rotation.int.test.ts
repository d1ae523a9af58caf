import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { WORKSPACE_ROOT } from '@envengine/dev-stack';
import { callResolve, createTenant, startTestStack, type TestStack, type TestTenant, until } from '@envengine/test-harness';

const shared = inject('stack');
const run = promisify(execFile);

/** The admin command, run as an operator runs it. */
async function admin(args: string[], env: Record<string, string> = {}): Promise<{ stdout: string; code: number }> {
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'tools/admin/admin.ts', ...args], {
      cwd: WORKSPACE_ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    });
    return { stdout, code: 0 };
  } catch (error) {
    const failed = error as { stdout?: string; code?: number };
    return { stdout: failed.stdout ?? '', code: failed.code ?? 1 };
  }
}

describe('master key rotation: every data key re-wrapped while the service serves', () => {
  // A stack of its own: its secrets-service is restarted with other keys.
  let stack: TestStack;
  let tenant: TestTenant;
  let environmentId: string;
  let mongo: MongoClient;
  const oldKey = () => readFileSync(join(stack.info.dataDir, 'secrets-master-key'), 'utf8').trim();
  const versions = () => mongo.db(stack.info.databases['secrets-service']).collection('local_secret_versions');
  const resolve = (binding: string) =>
    callResolve(stack.info, { tenantId: tenant.tenantId, body: { environment_id: environmentId, binding } });

  beforeAll(async () => {
    // One secrets-service whatever the profile: the test restarts it with other keys.
    stack = await startTestStack({ replicas: 1, mongoUrl: shared.mongoUrl, redisUrl: shared.redisUrl, temporalAddress: shared.temporalAddress });
    tenant = await createTenant(stack.info, 'rotation');
    mongo = await new MongoClient(stack.info.mongoUrl).connect();
    environmentId = (await tenant.api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/p', executor: 'local' })).body.data.id;
    for (let i = 0; i < 40; i += 1) {
      await tenant.api.put(`/environments/prod/secrets/s${i}`, { value: `value-${i}-a` });
      await tenant.api.put(`/environments/prod/secrets/s${i}`, { value: `value-${i}-b` });
      await tenant.api.put(`/environments/prod/bindings/b${i}`, { secret_refs: { password: `s${i}` } });
    }
  });

  afterAll(async () => {
    await mongo?.close();
    await stack?.stop();
  });

  it('re-wraps under the new key with no failed request, and the old key is then not needed', async () => {
    const before = await versions().distinct('data_key.master_key_id');
    expect(before).toHaveLength(1);
    const old = oldKey();
    const created = await admin(['master-key', 'new']);
    const newKey = created.stdout.trim();
    expect(newKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);

    // Step 1: the service learns the new key and keeps the old one for reading.
    await stack.services.restart('secrets-service', { SECRETS_MASTER_KEY: newKey, SECRETS_PREVIOUS_MASTER_KEYS: old });

    // Step 2: re-wrap while reads and writes keep going.
    let failures = 0;
    let requests = 0;
    let running = true;
    const load = (async () => {
      for (let i = 0; running; i = (i + 1) % 40) {
        const [read, write] = await Promise.all([
          resolve(`b${i}`),
          tenant.api.put(`/environments/prod/secrets/s${i}`, { value: `value-${i}-during` }),
        ]);
        requests += 2;
        if (read.status !== 200 || write.status !== 200) failures += 1;
      }
    })();
    const rewrap = await admin(['master-key', 'rewrap'], {
      MONGO_URL: stack.info.mongoUrl,
      SECRETS_MONGO_DB: stack.info.databases['secrets-service'],
      SECRETS_MASTER_KEY: newKey,
      SECRETS_PREVIOUS_MASTER_KEYS: old,
    });
    running = false;
    await load;
    expect(rewrap.code).toBe(0);
    expect(rewrap.stdout).toMatch(/re-wrapped \d+ data keys/);
    expect(rewrap.stdout).toContain('0 still under another key');
    expect(requests).toBeGreaterThan(0);
    expect(failures).toBe(0);

    const after = await versions().distinct('data_key.master_key_id');
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);

    // Step 3: the old key is dropped; every secret still opens.
    await stack.services.restart('secrets-service', { SECRETS_MASTER_KEY: newKey, SECRETS_PREVIOUS_MASTER_KEYS: '' });
    for (let i = 0; i < 40; i += 1) {
      const response = await resolve(`b${i}`);
      expect(response.status).toBe(200);
      expect(response.body.data.config.password).toMatch(new RegExp(`^value-${i}-(b|during)$`));
    }
  });

  it('with only the old key, a read fails loudly and says why in the log, never with the value', async () => {
    await stack.services.restart('secrets-service', { SECRETS_MASTER_KEY: oldKey(), SECRETS_PREVIOUS_MASTER_KEYS: '' });
    const response = await resolve('b0');
    expect(response.status).toBe(500);
    expect(response.body.error.code).toBe('internal_error');
    expect(response.text).not.toContain('value-0');
    // The log line is written as the 500 is answered: wait for it rather than for a time.
    const logFile = join(stack.info.dataDir, 'logs', 'secrets-service.log');
    const log = await until(async () => readFileSync(logFile, 'utf8'), (text) => /master key [0-9a-f]{16} is not configured/.test(text), 10_000);
    expect(log).toMatch(/master key [0-9a-f]{16} is not configured/);
    expect(log).not.toContain('value-0');
  });

  it('refuses to start with a malformed master key, naming the setting but not the key', async () => {
    const restart = stack.services.restart('secrets-service', { SECRETS_MASTER_KEY: 'not-a-key!!', SECRETS_PREVIOUS_MASTER_KEYS: '' });
    await expect(restart).rejects.toThrow();
    const log = readFileSync(join(stack.info.dataDir, 'logs', 'secrets-service.log'), 'utf8');
    expect(log).toContain('SECRETS_MASTER_KEY');
    expect(log).not.toContain('not-a-key!!');
  });
});
