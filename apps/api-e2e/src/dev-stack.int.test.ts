import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadOrCreateCredentials, readRunningStackFile, WORKSPACE_ROOT, type Credentials } from '@envengine/dev-stack';
import { ApiClient, until } from '@envengine/test-harness';

const shared = inject('stack');

/** `npm start` as a user runs it (tools/stack/stack.ts), on free ports and its own data directory. */
describe('npm start and npm run admin (a stack of its own)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'envengine-npm-start-'));
  const env = { ...process.env, ENVENGINE_DATA_DIR: dataDir, ENVENGINE_PORTS: 'random', TEMPORAL_ADDRESS: shared.temporalAddress };
  let stack: ChildProcess;
  let output = '';
  let api: ApiClient;

  const outputShows = (text: string) => until(async () => output, (seen) => seen.includes(text), 120_000);

  beforeAll(async () => {
    stack = spawn(process.execPath, ['--import', 'tsx', 'tools/stack/stack.ts', 'up'], { cwd: WORKSPACE_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    stack.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    stack.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await outputShows('Press Ctrl-C to stop.');
    const gateway = /Gateway:\s+(\S+)\/api\/v1/.exec(output)![1]!;
    const token = /Dev token:\s+(\S+)/.exec(output)![1]!;
    api = new ApiClient(`${gateway}/api/v1`, token);
  }, 180_000);

  afterAll(async () => {
    if (stack && stack.exitCode === null) {
      const exited = new Promise((resolve) => stack.once('exit', resolve));
      stack.kill('SIGINT');
      await exited;
    }
  });

  const secretValues = (credentials: Credentials) => Object.values(credentials).flatMap((file) => Object.values(file) as string[]);

  it('prints the servers and the token, never a credential', () => {
    const credentials = loadOrCreateCredentials(dataDir);
    expect(output).toMatch(/mongodb ready at mongodb:\/\/127\.0\.0\.1:\d+\/\?replicaSet=rs0 /);
    expect(output).toMatch(/redis ready at redis:\/\/127\.0\.0\.1:\d+ /);
    expect(secretValues(credentials).filter((value) => output.includes(value))).toEqual([]);
    // Positive control: the dev token, which is meant to be shown, is found the same way.
    expect(output.includes(/Dev token:\s+(\S+)/.exec(output)![1]!)).toBe(true);
    // Where the admin command finds it: its pid and servers, without credentials.
    const running = readRunningStackFile(dataDir)!;
    expect(running.pid).toBe(stack.pid);
    expect(secretValues(credentials).filter((value) => JSON.stringify(running).includes(value))).toEqual([]);
  });

  it("prints each process's /metrics by its job in deploy/prometheus, and each answers there", async () => {
    const lines = output.slice(output.indexOf('  Metrics:')).split('\n').slice(1).filter((line) => line.includes(' → '));
    const printed = lines.map((line) => /^ {4}(\S+) +→ (\S+)$/.exec(line)!);
    expect(printed.map((match) => match[1])).toEqual([
      'envengine-gateway',
      'envengine-placement-service',
      'envengine-deployment-service',
      'envengine-secrets-service',
      'envengine-workflow-worker',
      'envengine-attempt-worker',
    ]);
    for (const [, job, url] of printed) {
      const answer = await fetch(url!);
      expect(answer.status, job).toBe(200);
      expect(await answer.text(), job).toContain('envengine_process_');
    }
  });

  it('rotates the Redis credentials with the admin command: the stack restarts its services, nothing is lost', async () => {
    expect((await api.post('/environments', { name: 'prod', storage_prefix: 's3://lake/p', executor: 'local' })).status).toBe(201);
    const before = loadOrCreateCredentials(dataDir);
    const admin = await new Promise<{ code: number | null; text: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'tools/admin/admin.ts', 'credentials', 'rotate', 'redis'], { cwd: WORKSPACE_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout!.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.once('exit', (code) => resolve({ code, text }));
    });
    expect(admin.code, admin.text).toBe(0);
    expect(admin.text).toMatch(/told the running stack \(pid \d+\)/);
    await outputShows('services restarted with the new credentials');
    const after = loadOrCreateCredentials(dataDir);
    expect(after.redis.REDIS_GATEWAY_PASSWORD).not.toBe(before.redis.REDIS_GATEWAY_PASSWORD);
    expect(secretValues(after).filter((value) => output.includes(value) || admin.text.includes(value))).toEqual([]);

    // The services use the new credentials; the old one is refused; the data is all there.
    expect((await api.get('/environments/prod')).status).toBe(200);
    expect((await api.post('/environments', { name: 'staging', storage_prefix: 's3://lake/s', executor: 'local' })).status).toBe(201);
    const running = readRunningStackFile(dataDir)!;
    const probe = new Redis(running.redis, { lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 1, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await expect(probe.call('AUTH', 'gateway', before.redis.REDIS_GATEWAY_PASSWORD)).rejects.toThrow(/WRONGPASS/);
      expect(await probe.call('AUTH', 'gateway', after.redis.REDIS_GATEWAY_PASSWORD)).toBe('OK');
    } finally {
      probe.disconnect();
    }
  });

  it('stops on Ctrl-C and removes its running-stack file', async () => {
    const exited = new Promise<number | null>((resolve) => stack.once('exit', resolve));
    stack.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(existsSync(join(dataDir, 'stack.json'))).toBe(false);
  });
});
