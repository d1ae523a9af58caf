import { join } from 'node:path';
import { freePort, ManagedProcess, waitUntil } from '@envengine/backing-servers';
import type { PoolCredentialIssued } from '@envengine/contracts';
import { WORKSPACE_ROOT } from '@envengine/dev-stack';
import type { StackInfo } from './test-stack.ts';

export interface PoolWorker {
  process: ManagedProcess;
  name: string;
  healthUrl: string;
  logFile: string;
  bundleCacheDir: string;
}

/** The installable worker (`nx run attempt-worker:build`), as a pool host runs it: every npm package compiled in. */
export const WORKER_PACKAGE_DIR = join(WORKSPACE_ROOT, 'dist', 'worker-package');
export const WORKER_PACKAGE_ENTRY = join(WORKER_PACKAGE_DIR, 'envengine-worker', 'envengine-worker.mjs');

/**
 * A tenant's worker as docs/api.md#worker-pools starts one: the installable worker in `--pool` mode
 * with the credential's token, Redis user and queue, reaching only the gateway and Redis.
 */
export async function startPoolWorker(
  stack: StackInfo,
  credential: PoolCredentialIssued,
  name: string,
  env: Record<string, string> = {},
): Promise<PoolWorker> {
  const port = await freePort();
  const worker = launchPoolWorker(stack, credential, name, { PORT: String(port), ...env });
  const healthUrl = `http://127.0.0.1:${port}`;
  await waitUntil(`pool worker ${name}`, async () => (await fetch(`${healthUrl}/readyz`)).status === 200, {
    timeoutMs: 30_000,
    alive: () => worker.process.running,
    logFile: worker.logFile,
  });
  return { ...worker, healthUrl };
}

/** The worker process only, not waited for, with no PORT unless `env` gives one (it then picks a free port). */
export function launchPoolWorker(
  stack: StackInfo,
  credential: PoolCredentialIssued,
  name: string,
  env: Record<string, string> = {},
): Omit<PoolWorker, 'healthUrl'> {
  const logFile = join(stack.dataDir, 'logs', `pool-worker-${name}.log`);
  const bundleCacheDir = join(stack.dataDir, `pool-worker-${name}-bundles`);
  const process_ = new ManagedProcess({
    name: `pool-worker-${name}`,
    command: process.execPath,
    args: [WORKER_PACKAGE_ENTRY, '--pool'],
    logFile,
    cwd: WORKSPACE_ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      API_URL: stack.gatewayUrl,
      // Where the credential says its queues are: the pool gate.
      REDIS_URL: credential.redis.url ?? stack.poolGateUrl,
      POOL_TOKEN: credential.token,
      REDIS_USERNAME: credential.redis.username,
      REDIS_PASSWORD: credential.redis.password,
      POOL_QUEUE: credential.queue,
      WORKER_NAME: name,
      BUNDLE_CACHE_DIR: bundleCacheDir,
      SPOOL_DIR: join(stack.dataDir, `pool-worker-${name}-spool`),
      HEARTBEAT_INTERVAL_MS: '500',
      ASSET_TIMEOUT_MS: '20000',
      ...env,
    },
  });
  return { process: process_, name, logFile, bundleCacheDir };
}
