import { Readable } from 'node:stream';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runAssetInSandbox } from './asset-runner.ts';
import { spawnAssetChild, type SandboxSettings } from './os-sandbox.ts';
import { WarmSandboxes } from './warm-sandboxes.ts';

// Real children: each asset logs its process id, so a test sees which child ran it.
let workDir: string;
// Without the OS sandbox: these cases tell children apart by their host pid, which a child
// in its own PID namespace cannot see (asset-runner.test.ts runs children in the sandbox).
const sandbox: SandboxSettings = { mode: 'off', memoryMb: 128, cpuSeconds: 60, tmpMb: 16, env: { TZ: 'UTC' }, cgroups: null };
let pools: WarmSandboxes[] = [];

beforeAll(async () => {
  workDir = await realpath(await mkdtemp(join(tmpdir(), 'warm-sandboxes-')));
  // The sandbox runs as an unprivileged user, who must be able to reach the bundles.
  await chmod(workDir, 0o755);
});

afterEach(() => {
  for (const pool of pools) pool.close();
  pools = [];
});

afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

async function bundle(name: string): Promise<string> {
  const dir = join(workDir, name);
  await mkdir(join(dir, 'assets'), { recursive: true });
  await writeFile(join(dir, 'assets', 'asset.js'), `export default async (ctx) => ctx.log(String(process.pid));`);
  return dir;
}

/** A pool whose forks are recorded, in order. */
function recordingPool(capacity: number, idleMs = 60_000) {
  const forked: ChildProcess[] = [];
  const pool = new WarmSandboxes({
    capacity,
    idleMs,
    fork: (bundleRoot, egress) => {
      const child = spawnAssetChild(sandbox, bundleRoot, egress);
      forked.push(child.process);
      return child;
    },
  });
  pools.push(pool);
  return { pool, forked };
}

/** Runs the bundle's asset through the pool; answers the pid of the child that ran it. */
async function runIn(pool: WarmSandboxes, bundleDir: string): Promise<number> {
  const logs: string[] = [];
  const outcome = await runAssetInSandbox({
    bundleDir,
    entry: 'assets/asset.js',
    assetKey: 'asset',
    timeoutMs: 20_000,
    sandbox,
    schema: null,
    sandboxes: pool,
    handlers: { emit: () => ({ write: async () => undefined, finish: async () => undefined, abort: () => undefined }), read: async () => Readable.from([]), connection: async () => ({}), log: (line) => logs.push(line) },
  });
  expect(outcome).toEqual({ status: 'succeeded' });
  return Number(logs[0]);
}

const exited = (child: ChildProcess) => (child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : once(child, 'exit').then(() => undefined));

describe('WarmSandboxes', { timeout: 30_000 }, () => {
  it('runs the next asset of a bundle in a child forked ahead, and each child runs one asset only', async () => {
    const { pool, forked } = recordingPool(2);
    const dir = await bundle('one');
    const first = await runIn(pool, dir);
    expect(first).toBe(forked[0]!.pid);
    // Forked while the first asset ran, and waiting now.
    expect(forked).toHaveLength(2);
    expect(pool.ready).toBe(1);
    const second = await runIn(pool, dir);
    expect(second).toBe(forked[1]!.pid);
    expect(second).not.toBe(first);
    await exited(forked[0]!);
    await exited(forked[1]!);
    expect(pool.ready).toBe(1);
  });

  it('keeps at most `capacity` spares, stopping the least recently used bundle\'s first', async () => {
    const { pool, forked } = recordingPool(1);
    await runIn(pool, await bundle('a'));
    const spareOfA = forked[1]!;
    await runIn(pool, await bundle('b'));
    await exited(spareOfA);
    expect(spareOfA.signalCode).toBe('SIGKILL');
    expect(pool.ready).toBe(1);
  });

  it('forks on demand when a spare died while it waited, and with capacity 0', async () => {
    const { pool, forked } = recordingPool(1);
    const dir = await bundle('dies');
    await runIn(pool, dir);
    forked[1]!.kill('SIGKILL');
    await exited(forked[1]!);
    expect(pool.ready).toBe(0);
    expect(await runIn(pool, dir)).toBe(forked[2]!.pid);

    const cold = recordingPool(0);
    expect(await runIn(cold.pool, dir)).toBe(cold.forked[0]!.pid);
    expect(cold.forked).toHaveLength(1);
    expect(cold.pool.ready).toBe(0);
  });

  it('stops a spare left idle, and every spare on close', async () => {
    const idle = recordingPool(1, 200);
    await runIn(idle.pool, await bundle('idle'));
    await exited(idle.forked[1]!);
    expect(idle.pool.ready).toBe(0);

    const closing = recordingPool(1);
    await runIn(closing.pool, await bundle('closing'));
    closing.pool.close();
    await exited(closing.forked[1]!);
    expect(closing.pool.ready).toBe(0);
  });
});
