import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Run, WORKER_EXIT_CODES, type PoolCredentialIssued } from '@envengine/contracts';
import { freePort, ManagedProcess, waitUntil } from '@envengine/backing-servers';
import { WORKSPACE_ROOT } from '@envengine/dev-stack';
import { createTenant, WORKER_PACKAGE_DIR, type TestTenant } from '@envengine/test-harness';
import { deployOnS3, issueCredential, waitForRun } from './runs-fixtures.ts';

const stack = inject('stack');

/**
 * The installable worker as a pool host gets it: the npm pack tarball unpacked in a
 * directory of its own outside the repository, with a copy of Node, a HOME and a cwd there.
 */
function unpackWorker(): { dir: string; node: string; entry: string } {
  const tarball = readdirSync(WORKER_PACKAGE_DIR).find((name) => /^envengine-worker-.*\.tgz$/.test(name));
  if (!tarball) throw new Error(`no envengine-worker-<version>.tgz in ${WORKER_PACKAGE_DIR}: build it (nx run attempt-worker:build)`);
  const dir = mkdtempSync(join(tmpdir(), 'pool-host-'));
  // The sandbox's user (nobody) reads the bundle cache under it.
  chmodSync(dir, 0o755);
  const unpacked = spawnSync('tar', ['xzf', join(WORKER_PACKAGE_DIR, tarball), '-C', dir]);
  expect(unpacked.status).toBe(0);
  const node = join(dir, 'node');
  copyFileSync(process.execPath, node);
  chmodSync(node, 0o755);
  mkdirSync(join(dir, 'home'));
  return { dir, node, entry: join(dir, 'package', 'envengine-worker.mjs') };
}

/**
 * The command that runs the worker with no view of the repository: bubblewrap shows it the
 * host's file system with an empty directory in place of the repository. (The worker's own
 * sandbox, bubblewrap again, runs inside.)
 */
function hiddenRepositoryArgs(command: string[]): string[] {
  return ['--dev-bind', '/', '/', '--tmpfs', WORKSPACE_ROOT, '--die-with-parent', '--', ...command];
}

describe('the installable worker, on a host that has only Node', () => {
  let tenant: TestTenant;
  let credential: PoolCredentialIssued;
  let host: ReturnType<typeof unpackWorker>;
  let worker: ManagedProcess | undefined;

  beforeAll(async () => {
    tenant = await createTenant(stack, 'pool-host');
    await deployOnS3(tenant, 'prod', 's3://lake/prod', 'remote');
    credential = await issueCredential(tenant);
    host = unpackWorker();
  });

  afterAll(async () => {
    await worker?.stop();
  });

  it("is one file beside its sandbox child's two (the child, and the row codec it loads at its first emit or read) and a package.json that needs no dependency", () => {
    expect(readdirSync(join(host.dir, 'package')).sort()).toEqual(['asset-child-codec.js', 'asset-child.js', 'envengine-worker.js.LEGAL.txt', 'envengine-worker.mjs', 'package.json', 'seccomp-filter.py']);
  });

  it('runs a remote run of two assets through s3:// from outside the repository, with only its credential file', async () => {
    const credentialFile = join(host.dir, 'pool-credential.json');
    writeFileSync(credentialFile, JSON.stringify(credential), { mode: 0o600 });
    const port = await freePort();
    worker = new ManagedProcess({
      name: 'packaged-worker',
      command: 'bwrap',
      args: hiddenRepositoryArgs([host.node, host.entry, '--pool']),
      cwd: host.dir,
      logFile: join(stack.dataDir, 'logs', 'packaged-worker.log'),
      env: {
        PATH: '/usr/local/bin:/usr/bin:/bin',
        HOME: join(host.dir, 'home'),
        API_URL: stack.gatewayUrl,
        POOL_CREDENTIAL_FILE: credentialFile,
        WORKER_NAME: 'packaged',
        BUNDLE_CACHE_DIR: join(host.dir, 'bundles'),
        HEARTBEAT_INTERVAL_MS: '500',
        PORT: String(port),
      },
    });
    await waitUntil('packaged worker', async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200, {
      timeoutMs: 30_000,
      alive: () => worker!.running,
      logFile: worker.logFile,
    });
    const created = await tenant.api.post('/environments/prod/runs', { assets: ['orders', 'totals'] });
    const run = await waitForRun(tenant, Run.parse(created.body.data).id);
    expect(run.status).toBe('succeeded');
    expect(run.attempts[0]).toMatchObject({ executor: 'remote', worker: 'packaged' });
    const logs = (await tenant.api.get(`/runs/${run.id}/logs`)).body.data as Array<{ message: string }>;
    expect(logs.map((line) => line.message)).toContain('read 3 orders, total 30.5');
  });

  // The host's own Node, when it is neither 24 nor 26 (Debian's nodejs is 20 here).
  const systemNode = ['/usr/bin/node', '/usr/local/bin/node'].find((path) => existsSync(path) && !/^v2[46]\./.test(spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout));

  it.skipIf(systemNode === undefined)('refuses to start on another Node, saying what it needs and how to get it', () => {
    const started = spawnSync(systemNode!, [host.entry, '--pool'], { cwd: host.dir, encoding: 'utf8', env: { PATH: '/usr/bin:/bin', HOME: join(host.dir, 'home') }, timeout: 30_000 });
    expect(started.status).toBe(WORKER_EXIT_CODES.configuration);
    expect(started.stderr).toMatch(/^The envengine worker needs Node\.js >=24\.11 <25 \|\| >=26 <27; this is v\d+\.\d+\.\d+\. Install Node\.js 26/);
    // One line, no stack trace.
    expect(started.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('answers a missing setting with one line naming it, and exit 78', () => {
    const started = spawnSync(host.node, [host.entry, '--pool'], { cwd: host.dir, encoding: 'utf8', env: { PATH: '/usr/bin:/bin', HOME: join(host.dir, 'home') }, timeout: 30_000 });
    expect(started.status).toBe(WORKER_EXIT_CODES.configuration);
    expect(started.stderr).toMatch(/POOL_TOKEN: is required in --pool mode/);
    expect(started.stderr).not.toMatch(/\n\s+at /);
    const unreadable = spawnSync(host.node, [host.entry, '--pool'], {
      cwd: host.dir,
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin', HOME: join(host.dir, 'home'), POOL_CREDENTIAL_FILE: join(host.dir, 'missing.json') },
      timeout: 30_000,
    });
    expect(unreadable.status).toBe(WORKER_EXIT_CODES.configuration);
    expect(unreadable.stderr).toMatch(/POOL_CREDENTIAL_FILE: cannot read .*missing\.json \(ENOENT\)/);
  });
});
