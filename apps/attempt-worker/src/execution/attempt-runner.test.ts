import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AttemptPlan, FinishAttemptRequest } from '@envengine/contracts';
import { trace, TRACER_NAME } from '@envengine/tracing';
import type { Logger } from '@envengine/process-kit';
import { WorkerApiError, type WorkerApiClient } from '../worker-api/worker-api-client.ts';
import type { SandboxSettings } from '../sandbox/os-sandbox.ts';
import { WarmSandboxes } from '../sandbox/warm-sandboxes.ts';
import { spawnAssetChild } from '../sandbox/os-sandbox.ts';
import { AttemptRunner, nothingToReadMessage } from './attempt-runner.ts';
import { LeaseKeeper } from './lease-keeper.ts';

// One attempt through the runner, with the worker API faked and everything else real: the
// bundle on disk, the asset's child in the OS sandbox, its emit stored on a file:// lake.
let workDir: string;
const sandbox: SandboxSettings = { mode: 'bwrap', memoryMb: 128, cpuSeconds: 60, tmpMb: 16, env: { TZ: 'UTC' }, cgroups: null };
const worker = { id: 'runner-test-1', name: 'runner-test', executor: 'remote', concurrency: 1, sandbox: 'bwrap' } as const;
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined } as unknown as Logger;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'attempt-runner-'));
  // The sandbox runs as an unprivileged user, who must be able to reach the bundle.
  await chmod(workDir, 0o755);
  await mkdir(join(workDir, 'bundle', 'assets'), { recursive: true });
  await writeFile(join(workDir, 'bundle', 'assets', 'orders.js'), 'export default async (ctx) => { await ctx.emit([{ id: 1 }, { id: 2 }]); };');
});

afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

function planOn(lake: string): AttemptPlan {
  return {
    run_id: 'run_1',
    attempt_number: 1,
    tenant_id: 'ten_1',
    environment: { id: 'env_1', name: 'prod', storage_prefix: `file://${lake}`, egress: 'none' },
    deployment_id: 'dep_1',
    bundle_ref: 'sha256:00',
    assets: [{ key: 'orders', entry: 'assets/orders.js', binding: 'warehouse', binding_mode: 'live', deps: [], schema: null, timeout_seconds: null }],
    log_limits: { max_lines: 1000, max_chars: 100_000 },
    run_timeout: null,
  };
}

/** Runs the attempt with the given answer to its materialization's record; what it finished with, and the files left on the lake. */
async function runWith(recordAnswer: () => Promise<unknown>, lake: string, finishAnswer: () => Promise<unknown> = async () => ({})) {
  const finished: FinishAttemptRequest[] = [];
  const api = {
    start: async () => ({ attempt_id: 'att_1', lease: 'lease-1', plan: planOn(lake) }),
    heartbeat: async () => ({ superseded: [] }),
    appendLogs: async () => undefined,
    recordMaterialization: recordAnswer,
    finish: async (_held: unknown, report: FinishAttemptRequest) => {
      finished.push(report);
      return finishAnswer();
    },
  } as unknown as WorkerApiClient;
  const sandboxes = new WarmSandboxes({ capacity: 0, idleMs: 1000, fork: (bundleRoot, egress) => spawnAssetChild(sandbox, bundleRoot, egress) });
  const runner = new AttemptRunner(api, async () => ({ directory: join(workDir, 'bundle'), release: () => undefined }), new LeaseKeeper(api, worker, quiet, 60_000, undefined), worker, quiet, {
    assetTimeoutMs: 30_000,
    sandbox,
    sandboxes,
    logFlushMs: 60_000,
    tracer: trace.getTracer(TRACER_NAME),
    spoolDirectory: join(workDir, 'spool'),
    maxMaterializationBytes: 64 * 1024 * 1024,
  });
  await mkdir(join(workDir, 'spool'), { recursive: true });
  const result = await runner.run('ten_1', 'att_1');
  const files = await readdir(lake, { recursive: true, withFileTypes: true }).then(
    (entries) => entries.filter((entry) => entry.isFile()).map((entry) => entry.name),
    () => [],
  );
  return { result, finished, files };
}

describe('AttemptRunner', { timeout: 60_000 }, () => {
  it('keeps a recorded materialization on the lake', async () => {
    const { result, files } = await runWith(async () => ({}), join(workDir, 'lake-kept'));
    expect(result).toBe('succeeded');
    expect(files).toEqual([expect.stringMatching(/^mat_[0-9a-z]+\.parquet$/)]);
  });

  it("removes a stored file whose record the engine refused for good (its lease superseded: the environment may be purged already)", async () => {
    const refused = () => Promise.reject(new WorkerApiError(409, 'lease_superseded', 'Attempt "att_1" is canceled; this worker\'s writes are refused.'));
    // The outcome's write is refused as well, as the engine refuses every write under that lease.
    const { result, files } = await runWith(refused, join(workDir, 'lake-refused'), refused);
    expect(result).toBe('superseded');
    expect(files).toEqual([]);
  });
});

describe('nothingToReadMessage', () => {
  it('says, without a double negative, that the asset has nothing to read here yet, and what to run', () => {
    expect(nothingToReadMessage('cities', 'prod')).toBe('ctx.read("cities"): cities has no materialization here yet (or only quarantined ones): run it first (envctl runs start --env prod --asset cities)');
  });
});
