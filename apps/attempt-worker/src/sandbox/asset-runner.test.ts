import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { MAX_CHILD_MESSAGE_BYTES } from './sandbox-protocol.ts';
import { MAX_CALLS_IN_FLIGHT, MAX_OUTPUT_LINE_CHARS, runAssetInSandbox, type AssetHandlers, type RunAssetOptions } from './asset-runner.ts';
import { launchCommand, type SandboxSettings } from './os-sandbox.ts';
import { WarmSandboxes } from './warm-sandboxes.ts';
import { AssetCgroups, type AssetCgroup, type AssetCgroupLimits } from './asset-cgroups.ts';
import { spawn, spawnSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { decodeParquet, encodeParquet, inferSchema, type Row } from '@envengine/materialization-storage';

// Each case writes a tiny bundle into a temp dir and runs it in a real child process, in
// the OS sandbox (bubblewrap, installed by the test command's first step) unless a case
// says otherwise.
let workDir: string;

/** Marks this file's children in their environment, so that a test can find them on the host. */
const CHILD_MARK = `asset-runner-test-${randomBytes(6).toString('hex')}`;
const bwrapSandbox: SandboxSettings = { mode: 'bwrap', memoryMb: 128, cpuSeconds: 60, tmpMb: 16, env: { TZ: 'UTC', ENVENGINE_TEST_MARK: CHILD_MARK }, cgroups: null };
const permissionModelOnly: SandboxSettings = { ...bwrapSandbox, mode: 'off' };

/** Host processes that carry this file's mark (their environment is readable as root, or as their owner). */
function markedProcesses(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^[0-9]+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'latin1').includes(CHILD_MARK);
      } catch {
        return false;
      }
    })
    .map(Number);
}

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'asset-sandbox-'));
  // The sandbox runs as an unprivileged user, who must be able to reach the bundles.
  await chmod(workDir, 0o755);
});

afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

let bundleCount = 0;

/** Writes the files of one bundle (path → source) and returns its directory. */
async function writeBundle(files: Record<string, string>): Promise<string> {
  const bundleDir = join(workDir, `bundle-${++bundleCount}`);
  for (const [path, source] of Object.entries(files)) {
    await mkdir(dirname(join(bundleDir, path)), { recursive: true });
    await writeFile(join(bundleDir, path), source);
  }
  return bundleDir;
}

/** An upstream's file as a storage driver reads it: the rows encoded as Parquet, the schema theirs. */
function fileOf(rows: Row[]): Readable {
  return Readable.from([encodeParquet(inferSchema(rows), rows)]);
}

/** Handlers that record what the child sent (each emit's file decoded back to rows); any of them can be replaced. */
function recordingHandlers(overrides: Partial<AssetHandlers> = {}) {
  const emitted: Record<string, unknown>[][] = [];
  const logs: string[] = [];
  const handlers: AssetHandlers = {
    emit: () => {
      const chunks: Uint8Array[] = [];
      return {
        write: async (bytes) => void chunks.push(Uint8Array.from(bytes)),
        finish: async () => void emitted.push(await decodeParquet(Buffer.concat(chunks))),
        abort: () => undefined,
      };
    },
    read: async () => Readable.from([]),
    connection: async () => ({}),
    log: (message) => logs.push(message),
    ...overrides,
  };
  return { handlers, emitted, logs };
}

/**
 * Runs a bundle: the source of `assets/asset.js`, the files of a bundle, or a bundle
 * already written (`{ dir }`).
 */
async function runBundle(
  bundle: string | Record<string, string> | { dir: string },
  options: Partial<RunAssetOptions> = {},
  overrides: Partial<AssetHandlers> = {},
) {
  const recorded = recordingHandlers(overrides);
  const bundleDir =
    typeof bundle === 'string'
      ? await writeBundle({ 'assets/asset.js': bundle })
      : typeof bundle['dir'] === 'string' && Object.keys(bundle).length === 1
        ? bundle['dir']
        : await writeBundle(bundle);
  const outcome = await runAssetInSandbox({
    bundleDir,
    entry: 'assets/asset.js',
    assetKey: 'raw_orders',
    timeoutMs: 20_000,
    sandbox: bwrapSandbox,
    schema: null,
    handlers: recorded.handlers,
    ...options,
  });
  return { outcome, ...recorded };
}

// Generous: a child starts in ~0.1 s, but a loaded CI machine must not fail these.
describe('runAssetInSandbox', { timeout: 30_000 }, () => {
  it('runs Node 26 for the child (its permission model denies the network too)', () => {
    expect(process.versions.node.split('.')[0]).toBe('26');
  });

  it('relays emitted rows (as the Parquet file the child encoded), ctx.log and console output to the handlers', async () => {
    const { outcome, emitted, logs } = await runBundle(
      {
        'assets/asset.js': `
          import { readFileSync } from 'node:fs';
          export default async (ctx) => {
            ctx.log('starting', ctx.asset, { attempt: ctx.run.attempt });
            console.log('from console', 42);
            const seed = JSON.parse(readFileSync('data/seed.json', 'utf8'));
            await ctx.emit(seed.map((id) => ({ id, at: new Date(0) })));
          };
        `,
        'data/seed.json': '[1, 2, 3]',
      },
      { run: { id: 'run_1', attempt: 2 } },
    );
    expect(outcome).toEqual({ status: 'succeeded' });
    expect(emitted).toEqual([[1, 2, 3].map((id) => ({ id, at: '1970-01-01T00:00:00.000Z' }))]);
    expect(logs).toEqual(['starting raw_orders { attempt: 2 }', 'from console 42']);
  });

  it('runs a CommonJS entry', async () => {
    const { outcome, emitted } = await runBundle(
      { 'assets/orders.cjs': `module.exports = async (ctx) => ctx.emit([{ kind: 'cjs' }]);` },
      { entry: 'assets/orders.cjs' },
    );
    expect(outcome).toEqual({ status: 'succeeded' });
    expect(emitted).toEqual([[{ kind: 'cjs' }]]);
  });

  it('answers ctx.read and ctx.connection with what the handlers return', async () => {
    const reads: string[] = [];
    const { outcome, emitted } = await runBundle(
      `export default async (ctx) => {
        const upstream = await ctx.read('customers');
        const warehouse = await ctx.connection('warehouse');
        await ctx.emit(upstream.map((row) => ({ ...row, region: warehouse.region })));
      };`,
      {},
      {
        read: async (key) => {
          reads.push(key);
          return fileOf([{ customer: 'c1' }, { customer: 'c2' }]);
        },
        connection: async (name) => ({ region: `${name}-eu`, password: 's3cret' }),
      },
    );
    expect(outcome).toEqual({ status: 'succeeded' });
    expect(reads).toEqual(['customers']);
    expect(emitted).toEqual([
      [
        { customer: 'c1', region: 'warehouse-eu' },
        { customer: 'c2', region: 'warehouse-eu' },
      ],
    ]);
  });

  it("fails with the user code's error: its name, message and the bundle's frames at file:line", async () => {
    const { outcome } = await runBundle({
      'assets/asset.js': `import { check } from '../lib/check.js';\nexport default async () => {\n  check([]);\n};`,
      'lib/check.js': `export function check(orders) {\n  if (orders.length === 0) throw new RangeError('no orders today');\n}`,
    });
    expect(outcome).toEqual({
      status: 'failed',
      reason: 'threw',
      error: 'RangeError: no orders today\n    at check (lib/check.js:2:34)\n    at default (assets/asset.js:3:3)',
    });
  });

  it('shows the original source of a bundle that ships a source map', async () => {
    // What `esbuild src/orders.ts --bundle --sourcemap --outfile=assets/asset.js` writes, cut to one mapping per line.
    const map = { version: 3, sources: ['../src/orders.ts'], names: [], mappings: 'AAAA;AACA;AACA,EAAE', sourcesContent: null };
    const code = `export default async () => {\n  const x = 1;\n  throw new Error('from typescript');\n};\n//# sourceMappingURL=asset.js.map\n`;
    const { outcome } = await runBundle({ 'assets/asset.js': code, 'assets/asset.js.map': JSON.stringify(map) });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'threw', error: expect.stringMatching(/^Error: from typescript\n {4}at default \(src\/orders\.ts:3:\d+\)/) });
  });

  it('fails when an error is thrown from a callback of the user code', async () => {
    const { outcome } = await runBundle(`export default (ctx) => new Promise(() => setTimeout(() => { throw new Error('late failure'); }, 1));`);
    expect(outcome).toMatchObject({ status: 'failed', reason: 'threw', error: expect.stringMatching(/^Error: late failure\n {4}at Timeout\._onTimeout \(assets\/asset\.js:1:\d+\)/) });
  });

  it('fails at once when the promise of the user code can never settle', async () => {
    const { outcome } = await runBundle(`export default () => new Promise(() => {});`);
    expect(outcome).toMatchObject({ status: 'failed', error: 'the function of asset raw_orders returned a promise that never settled' });
  });

  it('fails clearly when the entry has no default export function', async () => {
    const { outcome } = await runBundle(`export const orders = 1;`);
    expect(outcome).toEqual({ status: 'failed', reason: 'threw', error: 'the entry module of asset raw_orders has no default export function' });
  });

  it('fails when the user code exits the process', async () => {
    const { outcome } = await runBundle(`export default async () => { process.exit(3); };`);
    expect(outcome).toEqual({ status: 'failed', reason: 'exited', error: 'asset raw_orders exited with code 3 before finishing' });
  });

  it('kills an endless loop at the time limit', async () => {
    const started = Date.now();
    const { outcome } = await runBundle(`export default async () => { while (true) {} };`, { timeoutMs: 1500 });
    expect(outcome).toEqual({
      status: 'failed',
      reason: 'timed-out',
      error: 'asset raw_orders was killed after exceeding its time limit of 1500 ms',
    });
    expect(Date.now() - started).toBeLessThan(15_000);
  }, 30_000);

  it('fails an unbounded allocation with the out-of-memory message', async () => {
    const { outcome } = await runBundle(
      `export default async () => {
        const kept = [];
        while (true) kept.push(new Array(100_000).fill(Math.random()));
      };`,
      { sandbox: { ...bwrapSandbox, memoryMb: 64 }, timeoutMs: 60_000 },
    );
    expect(outcome).toEqual({ status: 'failed', reason: 'out-of-memory', error: 'asset raw_orders ran out of memory (limit 64 MB)' });
  }, 90_000);

  // Node's permission model alone (SANDBOX=off): the second layer inside the OS sandbox.
  describe('permission model', () => {
    it('lets user code write no file', async () => {
      const target = join(workDir, 'written-by-user-code.txt');
      const { outcome } = await runBundle(`
        import { writeFileSync } from 'node:fs';
        export default async () => { writeFileSync(${JSON.stringify(target)}, 'x'); };
      `, { sandbox: permissionModelOnly });
      expect(outcome).toMatchObject({ status: 'failed', reason: 'threw', error: expect.stringMatching(/Access to this API has been restricted/) });
      expect(existsSync(target)).toBe(false);
    });

    it('lets user code write no file inside its own bundle either', async () => {
      const bundleDir = await writeBundle({
        'assets/asset.js': `import { writeFileSync } from 'node:fs'; export default async () => { writeFileSync('assets/extra.js', 'x'); };`,
      });
      const { outcome } = await runBundle({ dir: bundleDir }, { sandbox: permissionModelOnly });
      expect(outcome).toMatchObject({ status: 'failed', reason: 'threw' });
      expect(existsSync(join(bundleDir, 'assets', 'extra.js'))).toBe(false);
    });

    it('lets user code read nothing outside its bundle', async () => {
      const { outcome } = await runBundle(`
        import { readFileSync } from 'node:fs';
        export default async () => { readFileSync('/etc/hostname', 'utf8'); };
      `, { sandbox: permissionModelOnly });
      expect(outcome).toMatchObject({ status: 'failed', reason: 'threw', error: expect.stringMatching(/Access to this API has been restricted/) });
    });

    it('lets user code start no process', async () => {
      const { outcome } = await runBundle(`
        import { execFileSync } from 'node:child_process';
        export default async () => { execFileSync('/bin/true'); };
      `, { sandbox: permissionModelOnly });
      expect(outcome).toMatchObject({ status: 'failed', reason: 'threw', error: expect.stringMatching(/Access to this API has been restricted/) });
    });

    it("passes none of the worker's environment", async () => {
      process.env['SANDBOX_TEST_SECRET'] = 'must-not-leak';
      try {
        for (const sandbox of [permissionModelOnly, bwrapSandbox]) {
          const { outcome, emitted } = await runBundle(`export default (ctx) => ctx.emit([{ env: { ...process.env } }]);`, { sandbox });
          expect(outcome).toEqual({ status: 'succeeded' });
          const env = emitted[0]?.[0]?.['env'] as Record<string, string>;
          expect(env['SANDBOX_TEST_SECRET']).toBeUndefined();
          expect(env['TZ']).toBe('UTC');
        }
      } finally {
        delete process.env['SANDBOX_TEST_SECRET'];
      }
    });
  });

  // The OS layer (bubblewrap, rlimits): what hostile code tries, each refused or failing its asset.
  describe('OS sandbox', () => {
    let listener: Server;
    let listenerPort: number;
    beforeAll(async () => {
      listener = createServer((socket) => {
        socket.on('error', () => undefined); // the probe hangs up at once
        socket.end('host service');
      });
      await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
      listenerPort = (listener.address() as AddressInfo).port;
    });
    afterAll(() => listener.close());

    // Node's permission model off, so that what is refused is refused by the OS layer alone.
    const osLayerOnly: SandboxSettings = { ...bwrapSandbox, nodePermissionModel: false };
    const probe = (body: string) =>
      runBundle(`
        import * as fs from 'node:fs';
        import * as net from 'node:net';
        export default async (ctx) => { const report = {}; ${body}; await ctx.emit([report]); };
      `, { sandbox: osLayerOnly });
    const connectAttempt = (host: string, port: number) => `
      report.connect = await new Promise((resolve) => {
        const socket = net.connect({ host: ${JSON.stringify(host)}, port: ${port}, timeout: 3000 });
        socket.on('connect', () => { socket.destroy(); resolve('connected'); });
        socket.on('timeout', () => { socket.destroy(); resolve('timeout'); });
        socket.on('error', (error) => resolve(error.code));
      });`;

    it('reaches no port of the host: its loopback is its own (the same asset without the sandbox connects)', async () => {
      const sandboxed = await probe(connectAttempt('127.0.0.1', listenerPort));
      expect(sandboxed.outcome).toEqual({ status: 'succeeded' });
      expect(sandboxed.emitted[0]![0]!['connect']).toBe('ECONNREFUSED');
      // Without the OS sandbox, with the network the permission model gives public egress.
      const control = await runBundle(
        `import * as net from 'node:net'; export default async (ctx) => { const report = {}; ${connectAttempt('127.0.0.1', listenerPort)}; await ctx.emit([report]); };`,
        { sandbox: permissionModelOnly, egress: 'public' },
      );
      expect(control.emitted[0]![0]!['connect']).toBe('connected');
    });

    it('is denied the network by the permission model too (its second layer) unless its egress is public', async () => {
      const bundle = `import * as net from 'node:net'; import { lookup } from 'node:dns/promises'; export default async (ctx) => {
        const report = {}; ${connectAttempt('127.0.0.1', listenerPort)};
        report.lookup = await lookup('localhost').then(() => 'resolved', (error) => error.code);
        await ctx.emit([report]); };`;
      const denied = await runBundle(bundle, { sandbox: permissionModelOnly });
      expect(denied.outcome).toEqual({ status: 'succeeded' });
      expect(denied.emitted[0]![0]).toEqual({ connect: 'ERR_ACCESS_DENIED', lookup: 'ERR_ACCESS_DENIED' });
      const allowed = await runBundle(bundle, { sandbox: permissionModelOnly, egress: 'public' });
      expect(allowed.emitted[0]![0]).toEqual({ connect: 'connected', lookup: 'resolved' });
      // Node's notice that the flag is experimental is not a line of the attempt's log.
      expect(allowed.logs.map((line) => JSON.stringify(line)).join('\n')).not.toMatch(/ExperimentalWarning|experimental/i);
    });

    it('reaches no link-local address (cloud metadata)', async () => {
      const { emitted } = await probe(connectAttempt('169.254.169.254', 80));
      expect(emitted[0]![0]!['connect']).toBe('ENETUNREACH');
    });

    it("runs as an unprivileged user, sees only its own processes, and cannot reach the worker's", async () => {
      const { outcome, emitted } = await probe(`
        report.uid = process.getuid(); report.gid = process.getgid(); report.pid = process.pid;
        report.processes = fs.readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name)).length;
        report.root = fs.readdirSync('/').sort();
      `);
      expect(outcome).toEqual({ status: 'succeeded' });
      expect(emitted[0]![0]).toMatchObject({ uid: 65534, gid: 65534, pid: 2, processes: 2 });
      expect(emitted[0]![0]!['root']).toEqual(['bin', 'bundle', 'dev', 'lib', 'lib64', 'proc', 'sandbox', 'tmp', 'usr']);
      // Its parent is the sandbox's own init, which a SIGKILL from inside does not reach; the worker is not in its namespace.
      const signalled = await probe(`process.kill(process.ppid, 'SIGKILL'); report.signalled = process.ppid;`);
      expect(signalled.outcome).toEqual({ status: 'succeeded' });
      expect(signalled.emitted[0]![0]).toEqual({ signalled: 1 });
    });

    it('writes only to its private /tmp, and reads nothing of the host', async () => {
      const { outcome, emitted } = await probe(`
        fs.writeFileSync('/tmp/scratch', 'x'); report.tmp = fs.readFileSync('/tmp/scratch', 'utf8');
        for (const path of ['/bundle/extra.js', '/usr/evil']) { try { fs.writeFileSync(path, 'x'); report[path] = 'written'; } catch (error) { report[path] = error.code; } }
        for (const path of ['/etc/passwd', '/root', ${JSON.stringify(workDir)}]) { try { fs.readdirSync(path); report[path] = 'read'; } catch (error) { report[path] = error.code; } }
      `);
      expect(outcome).toEqual({ status: 'succeeded' });
      const report = emitted[0]![0]!;
      expect(report['tmp']).toBe('x');
      for (const path of ['/bundle/extra.js', '/usr/evil', '/etc/passwd', '/root', workDir]) expect(report[path]).toMatch(/^E[A-Z]+$/);
    });

    it('caps memory, Buffers included: twice the limit cannot be allocated', async () => {
      const { outcome } = await runBundle(
        `export default async () => { const kept = []; for (let i = 0; i < 8; i++) kept.push(Buffer.alloc(32 * 1024 * 1024, 1)); };`,
        { sandbox: { ...bwrapSandbox, memoryMb: 128 } },
      );
      expect(outcome).toEqual({ status: 'failed', reason: 'out-of-memory', error: 'asset raw_orders ran out of memory (limit 128 MB): Failed to allocate memory' });
      // Control: the same allocation passes without the cap.
      const control = await runBundle(
        `export default async () => { const kept = []; for (let i = 0; i < 8; i++) kept.push(Buffer.alloc(32 * 1024 * 1024, 1)); };`,
        { sandbox: { ...permissionModelOnly, memoryMb: 128 } },
      );
      expect(control.outcome).toEqual({ status: 'succeeded' });
    });

    it('kills a CPU spinner at its CPU time limit', async () => {
      const { outcome } = await runBundle(`export default async () => { while (true) {} };`, { sandbox: { ...bwrapSandbox, cpuSeconds: 1 }, timeoutMs: 120_000 });
      expect(outcome).toEqual({ status: 'failed', reason: 'cpu-limit', error: 'asset raw_orders was killed after using its CPU time limit of 1 s' });
    }, 130_000);

    it('bounds output without newlines: cut into one capped line and a note of what was dropped', async () => {
      const { outcome, logs } = await runBundle(
        `export default async () => { const chunk = 'y'.repeat(1 << 20); for (let i = 0; i < 100; i++) await new Promise((resolve) => process.stdout.write(chunk, resolve)); };`,
        { timeoutMs: 120_000 },
      );
      expect(outcome).toEqual({ status: 'succeeded' });
      expect(logs).toHaveLength(2);
      expect(logs[0]).toHaveLength(MAX_OUTPUT_LINE_CHARS);
      expect(logs[1]).toBe(`… (${100 * (1 << 20) - MAX_OUTPUT_LINE_CHARS} more characters of that line, which had no newline within ${MAX_OUTPUT_LINE_CHARS}, were dropped)`);
    }, 130_000);
  });

  describe('kernel caps: a cgroup per child, a read-only root, no user namespaces', () => {
    const MB = 1024 * 1024;
    // Node's permission model off: what is refused here is refused by the kernel.
    const osLayerOnly: SandboxSettings = { ...bwrapSandbox, nodePermissionModel: false };
    const capped = (limits: Partial<AssetCgroupLimits> = {}) => {
      const cgroups = AssetCgroups.open({ memoryBytes: 256 * MB, maxPids: 64, cpuCores: 1, ...limits });
      if ('problem' in cgroups) throw new Error(`this test needs cgroups: ${cgroups.problem}`);
      return cgroups;
    };
    const report = async (body: string, sandbox: SandboxSettings) => {
      const ran = await runBundle(
        `import * as fs from 'node:fs'; import * as childProcess from 'node:child_process';
         export default async (ctx) => { const report = {}; ${body}; await ctx.emit([report]); };`,
        { sandbox, timeoutMs: 60_000 },
      );
      expect(ran.outcome).toEqual({ status: 'succeeded' });
      return ran.emitted[0]![0]!;
    };

    it('finds the cgroup hierarchies of this host and names its version', () => {
      const cgroups = capped();
      expect([1, 2]).toContain(cgroups.version);
    });

    it('writes nothing outside the capped /tmp: the root and /dev (with /dev/shm) are read-only', async () => {
      const got = await report(
        `for (const path of ['/x', '/dev/shm/x', '/dev/x', '/sandbox/x']) { try { fs.writeFileSync(path, 'x'); report[path] = 'written'; } catch (error) { report[path] = error.code; } }
         fs.writeFileSync('/tmp/x', 'x'); report.tmp = 'written'; fs.writeFileSync('/dev/null', 'x'); report.null = 'written';`,
        { ...osLayerOnly, cgroups: capped() },
      );
      expect(got).toEqual({ '/x': 'EROFS', '/dev/shm/x': 'EROFS', '/dev/x': 'EROFS', '/sandbox/x': 'EROFS', tmp: 'written', null: 'written' });
    });

    it('has no node:sqlite, which opened files around the permission model', async () => {
      for (const sandbox of [bwrapSandbox, osLayerOnly]) {
        const got = await report(
          `try { await import('node:sqlite'); report.sqlite = 'loaded'; } catch (error) { report.sqlite = error.code; }
           report.builtin = typeof process.getBuiltinModule('node:sqlite');`,
          sandbox,
        );
        expect(got).toEqual({ sqlite: 'ERR_UNKNOWN_BUILTIN_MODULE', builtin: 'undefined' });
      }
    });

    it('counts files in /tmp as memory: past the cgroup cap the kernel ends the child, and the error names the limit', async () => {
      // /tmp may hold 1 GiB, the cgroup 192 MB: writing 400 MB stops at the cgroup.
      const fill = `export default async () => { const chunk = Buffer.alloc(1024 * 1024, 7); const fd = require('node:fs').openSync('/tmp/fill', 'w'); for (let i = 0; i < 400; i++) require('node:fs').writeSync(fd, chunk); };`.replaceAll("require('node:fs')", 'fs');
      const source = `import * as fs from 'node:fs'; ${fill}`;
      const cgroups = capped({ memoryBytes: 192 * MB });
      const sandbox: SandboxSettings = { ...osLayerOnly, tmpMb: 1024, cgroups };
      const { outcome } = await runBundle(source, { sandbox, timeoutMs: 60_000 });
      expect(outcome).toEqual({
        status: 'failed',
        reason: 'out-of-memory',
        error: 'asset raw_orders ran out of memory (limit 128 MB; 192 MB with its files in /tmp and the runtime, and the kernel ended it there)',
      });
      // Control: the same writes pass without the cgroup.
      const control = await runBundle(source, { sandbox: { ...sandbox, cgroups: null }, timeoutMs: 60_000 });
      expect(control.outcome).toEqual({ status: 'succeeded' });
    });

    it('stops a fork bomb at the cgroup\'s process limit', async () => {
      const bomb = `const started = []; for (let i = 0; i < 300; i++) { try { started.push(childProcess.spawn('/usr/bin/sleep', ['30'], { stdio: 'ignore' })); await new Promise((resolve, reject) => { started.at(-1).once('spawn', resolve); started.at(-1).once('error', reject); }); } catch (error) { report.refused = error.code; break; } }
        report.started = started.length; for (const child of started) child.kill('SIGKILL');`;
      const got = await report(bomb, { ...osLayerOnly, cgroups: capped({ maxPids: 48 }) });
      expect(got['refused']).toBe('EAGAIN');
      expect(got['started']).toBeLessThan(48);
      // Control: without the cgroup all 300 start.
      const control = await report(bomb, { ...osLayerOnly, cgroups: null });
      expect(control).toEqual({ started: 300 });
    }, 120_000);

    it('creates no user namespace (unshare -Urn is refused), though the host can', async () => {
      const got = await report(
        `const ran = childProcess.spawnSync('/usr/bin/unshare', ['-Urn', '/usr/bin/true'], { encoding: 'utf8' }); report.status = ran.status; report.said = ran.stderr.trim();`,
        { ...osLayerOnly, cgroups: capped() },
      );
      expect(got['status']).not.toBe(0);
      expect(got['said']).toMatch(/unshare failed|Operation not permitted|No space left on device/);
      const host = spawnSync('unshare', ['-Urn', 'true']);
      expect(host.status).toBe(0);
    });

    /** Cgroups whose children's cgroups the test can see. */
    const watched = (limits: Partial<AssetCgroupLimits> = {}) => {
      const cgroups = capped(limits);
      const made: AssetCgroup[] = [];
      const create = cgroups.create.bind(cgroups);
      cgroups.create = () => {
        const cgroup = create();
        made.push(cgroup);
        return cgroup;
      };
      return { cgroups, made };
    };

    it('holds the child to its CPU quota: the kernel throttled it', async () => {
      // 300 ms of CPU at 0.2 cores takes at least 1.5 s of wall time.
      const { cgroups, made } = watched({ cpuCores: 0.2 });
      const got = await report(
        `const wall = Date.now(); const start = process.cpuUsage(); while (process.cpuUsage(start).user < 300_000) {} report.ratio = 0.3 / ((Date.now() - wall) / 1000);`,
        { ...osLayerOnly, cgroups },
      );
      expect(got['ratio']).toBeLessThan(0.35);
      expect(made).toHaveLength(1);
      expect(made[0]!.report!.cpuThrottledPeriods).toBeGreaterThan(0);
    });

    it("runs V8 without its compiling and collecting helper threads under a quota of a core or less, where they would only spend the child's quota", async () => {
      const flags = `report.flags = process.execArgv.filter((flag) => ['--no-concurrent-recompilation', '--single-threaded-gc'].includes(flag));`;
      const without = { flags: ['--no-concurrent-recompilation', '--single-threaded-gc'] };
      expect(await report(flags, { ...bwrapSandbox, cgroups: capped({ cpuCores: 1 }) })).toEqual(without);
      expect(await report(flags, { ...bwrapSandbox, cgroups: capped({ cpuCores: 0.5 }) })).toEqual(without);
      // A child given more than a core, or no quota at all, keeps them.
      expect(await report(flags, { ...bwrapSandbox, cgroups: capped({ cpuCores: 2 }) })).toEqual({ flags: [] });
      expect(await report(flags, { ...bwrapSandbox, cgroups: null })).toEqual({ flags: [] });
    });

    /**
     * A child that never speaks, and leaves a process behind holding its pipes: `sh` forks a
     * `sleep` (which inherits stdout, stderr and the channel), then becomes another `sleep`.
     * Killing the child alone leaves its pipes open.
     */
    const pipeHolders = (cgroup: AssetCgroup | null) =>
      new WarmSandboxes({
        capacity: 0,
        idleMs: 60_000,
        fork: () => {
          const launch = launchCommand(['/bin/sh', '-c', 'sleep 600 & exec sleep 600'], cgroup, false);
          const child = spawn(launch.command, launch.args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin', ENVENGINE_TEST_MARK: CHILD_MARK } });
          const channel = child.stdio[3] as Socket;
          channel.on('error', () => undefined); // as os-sandbox's channel: a reset is seen as its close
          return { process: child, channel, ready: Promise.resolve(), cgroup };
        },
      });
    /** Runs an asset on such a child and cancels it once it is up; the marked processes it had. */
    const cancelHeld = async (cgroup: AssetCgroup | null, closeDeadlineMs: number) => {
      const abort = new AbortController();
      let held: number[] = [];
      const ran = runBundle('export default async () => {};', {
        signal: abort.signal,
        sandboxes: pipeHolders(cgroup),
        closeDeadlineMs,
        watch: () => void setTimeout(() => {
          held = markedProcesses();
          abort.abort();
        }, 200),
      });
      const { outcome } = await ran;
      return { outcome, held };
    };

    it("settles a killed child whose pipes a process outside the kill still holds: its job is let go", async () => {
      const { outcome, held } = await cancelHeld(null, 300);
      expect(outcome).toMatchObject({ status: 'failed', reason: 'canceled', unclosed: expect.stringMatching(/pipes were still open 300 ms after it was killed/) });
      // The sleep left behind is still there (nothing could find it without a cgroup): the test's to end.
      const left = markedProcesses().filter((pid) => held.includes(pid));
      expect(left.length).toBeGreaterThan(0);
      for (const pid of left) process.kill(pid, 'SIGKILL');
    });

    it("kills everything in the child's cgroup with the child: the pipes close, and nothing is left", async () => {
      const cgroup = capped().create();
      // A deadline no test waits for: the pipes close because the cgroup's processes die.
      const { outcome, held } = await cancelHeld(cgroup, 600_000);
      expect(outcome).toEqual({ status: 'failed', reason: 'canceled', error: 'canceled' });
      expect(held.length).toBeGreaterThanOrEqual(2);
      await expect.poll(() => markedProcesses().filter((pid) => held.includes(pid)), { timeout: 10_000 }).toEqual([]);
    });

    it("removes each child's cgroup once it is gone, and its memory peak stayed under the cap", async () => {
      const { cgroups, made } = watched();
      const { outcome } = await runBundle(`export default async () => {};`, { sandbox: { ...bwrapSandbox, cgroups } });
      expect(outcome).toEqual({ status: 'succeeded' });
      expect(made).toHaveLength(1);
      // Removed when the child closes, or (a process of the sandbox still on its way out) moments later.
      await vi.waitFor(() => expect(made[0]!.procsFiles.filter((file) => existsSync(dirname(file)))).toEqual([]), { timeout: 15_000, interval: 50 });
      expect(made[0]!.report!.memoryPeakBytes).toBeGreaterThan(0);
      expect(made[0]!.report!.memoryPeakBytes).toBeLessThanOrEqual(256 * MB);
    });
  });

  it('kills the child at once when the signal aborts, and reports canceled (the sandboxed process too)', async () => {
    const abort = new AbortController();
    let running: number[] = [];
    const { outcome } = await runBundle(
      `export default async (ctx) => {
        ctx.log('waiting');
        await new Promise((resolve) => setTimeout(resolve, 600_000));
      };`,
      { signal: abort.signal },
      {
        log: (message) => {
          if (message !== 'waiting') return;
          running = markedProcesses();
          abort.abort();
        },
      },
    );
    expect(outcome).toEqual({ status: 'failed', reason: 'canceled', error: 'canceled' });
    // prlimit became bwrap, which started the sandbox's init and the child: all of them marked.
    expect(running.length).toBeGreaterThanOrEqual(2);
    await expect.poll(() => markedProcesses().filter((pid) => running.includes(pid)), { timeout: 10_000 }).toEqual([]);
  });

  it('fails with the message of a handler that throws, even if the user code swallows it', async () => {
    let emits = 0;
    const { outcome } = await runBundle(
      `export default async (ctx) => {
        try { await ctx.emit([{ id: 1 }]); } catch { /* swallowed */ }
        await ctx.emit([{ id: 2 }]);
      };`,
      {},
      {
        emit: () => ({
          write: async () => {
            emits += 1;
            throw new Error('row 0: id must be a string');
          },
          finish: async () => undefined,
          abort: () => undefined,
        }),
      },
    );
    expect(outcome).toEqual({ status: 'failed', reason: 'handler-failed', error: 'row 0: id must be a string' });
    expect(emits).toBe(1);
  });

  it('checks the rows against the declared schema in the child: a mismatch fails the asset, even if the user code swallows it, and nothing is stored', async () => {
    let opened = 0;
    const { outcome, emitted } = await runBundle(
      `export default async (ctx) => {
        try { await ctx.emit([{ id: 1 }, { id: 'two' }]); } catch { /* swallowed */ }
        await ctx.emit([{ id: 3 }]);
      };`,
      { schema: { columns: [{ name: 'id', type: 'integer' }] } },
      { emit: () => ((opened += 1), { write: async () => undefined, finish: async () => undefined, abort: () => undefined }) },
    );
    expect(outcome).toMatchObject({ status: 'failed', reason: 'handler-failed', error: expect.stringMatching(/^row 1, column "id": /) });
    expect(emitted).toEqual([]);
    // The rows were refused before any byte was sent: the worker opened no emit to store.
    expect(opened).toBe(0);
  });

  it('fails when ctx.emit is given something other than rows', async () => {
    const { outcome, emitted } = await runBundle(`export default (ctx) => ctx.emit([1, 2]);`);
    expect(outcome).toEqual({ status: 'failed', reason: 'handler-failed', error: 'asset raw_orders: ctx.emit takes an array of plain row objects' });
    expect(emitted).toEqual([]);
  });

  it('refuses an entry outside the bundle, or missing, before starting anything', async () => {
    const bundleDir = await writeBundle({ 'assets/asset.js': 'export default async () => {};' });
    await writeFile(join(workDir, 'outside.js'), 'export default async () => {};');
    for (const entry of ['../outside.js', 'assets/../../outside.js', join(workDir, 'outside.js'), 'assets/missing.js']) {
      const { outcome } = await runBundle({ dir: bundleDir }, { entry });
      expect(outcome).toMatchObject({ status: 'failed', reason: 'refused' });
    }
  });

  describe('a hostile channel: whatever the child writes to its fd 3 fails its own asset only', () => {
    /** An asset that writes these bytes (hex) to the channel itself, then waits to be stopped. */
    const writes = (hex: string) =>
      `import * as fs from 'node:fs'; export default async () => { fs.writeSync(3, Buffer.from('${hex}', 'hex')); await new Promise((resolve) => setTimeout(resolve, 15000)); };`;
    const frame = (body: string) => {
      const bytes = Buffer.from(body, 'utf8');
      const header = Buffer.alloc(4);
      header.writeUInt32BE(bytes.byteLength);
      return Buffer.concat([header, bytes]).toString('hex');
    };

    it('fails on a malformed frame (the bytes that crashed the V8 deserializer)', async () => {
      const { outcome } = await runBundle(writes('00000003ff0f80'));
      expect(outcome).toMatchObject({ status: 'failed', reason: 'protocol', error: expect.stringMatching(/^asset raw_orders sent the worker a message that is not valid \(.*\); the asset was stopped$/) });
    });

    it('fails on a frame announced over the limit, before reading it', async () => {
      const { outcome } = await runBundle(writes('fffffff0'));
      expect(outcome).toEqual({
        status: 'failed',
        reason: 'protocol',
        error: `asset raw_orders sent the worker a message of ${0xfffffff0} bytes, over the channel's limit of ${MAX_CHILD_MESSAGE_BYTES} bytes; the asset was stopped`,
      });
    });

    it('fails on JSON that is not a message of the protocol, naming its type', async () => {
      for (const body of ['{"type":"reply","id":1,"ok":true,"value":1}', '{"type":"done","extra":1}', '{"type":"call","id":-1,"method":"emit","arg":null}', '[1,2]', '"\u0000zz"']) {
        const { outcome } = await runBundle(writes(frame(body)));
        expect([body, outcome]).toMatchObject([body, { status: 'failed', reason: 'protocol' }]);
      }
    });

    it('fails on random bytes, 24 seeded inputs, and never throws in the worker', async () => {
      let seed = 0x5eed;
      const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
      const inputs = Array.from({ length: 24 }, (_, index) => {
        const body = Buffer.from(Array.from({ length: 1 + Math.floor(random() * 64) }, () => Math.floor(random() * 256)));
        // Half with a header that fits the body, half raw.
        if (index % 2 === 1) return body.toString('hex');
        const header = Buffer.alloc(4);
        header.writeUInt32BE(body.byteLength);
        return Buffer.concat([header, body]).toString('hex');
      });
      for (let start = 0; start < inputs.length; start += 6) {
        const outcomes = await Promise.all(inputs.slice(start, start + 6).map(async (hex) => [hex, (await runBundle(writes(hex), { timeoutMs: 3000 })).outcome] as const));
        // Raw bytes that announce more than they send leave the reader waiting: the time limit ends those.
        for (const [hex, outcome] of outcomes) expect([hex, outcome]).toMatchObject([hex, { status: 'failed', reason: expect.stringMatching(/^(protocol|timed-out)$/) }]);
      }
    });

    it('takes a row larger than the largest frame: the file crosses in frames of bytes', async () => {
      const { outcome, emitted } = await runBundle(`export default async (ctx) => { await ctx.emit([{ id: 1, blob: 'a' }, { id: 2, blob: 'x'.repeat(17 * 1024 * 1024) }]); };`, { sandbox: { ...bwrapSandbox, memoryMb: 512 } });
      expect(outcome).toEqual({ status: 'succeeded' });
      expect(emitted[0]!.map((row) => (row['blob'] as string).length)).toEqual([1, 17 * 1024 * 1024]);
    });

    it('fails on file bytes that break the emit protocol, naming what was sent', async () => {
      const bytesFrame = (id: number, hex: string) => {
        const header = Buffer.alloc(9);
        header.writeUInt32BE(5 + hex.length / 2, 0);
        header.writeUInt32BE(id, 5);
        return header.toString('hex') + hex;
      };
      const cases: Array<[string, string]> = [
        [frame('{"type":"call","id":1,"method":"connection","arg":"db"}') + bytesFrame(1, 'aa'), 'sent file bytes for a call that was already made (id 1)'],
        [bytesFrame(1, 'aa') + bytesFrame(2, 'bb'), 'sent the files of two emits at once'],
        [frame('{"type":"call","id":1,"method":"emit","arg":{"error":1}}'), 'sent an emit call with an argument it does not accept'],
        [frame('{"type":"call","id":1,"method":"emit","arg":"rows"}'), 'sent an emit call with an argument it does not accept'],
        ['000000030000ff', 'sent the worker a message that is not valid (a frame of bytes without the id of its call)'],
      ];
      for (const [hex, said] of cases) {
        const { outcome } = await runBundle(writes(hex), {}, { connection: () => new Promise(() => undefined) });
        expect([hex, outcome]).toEqual([hex, { status: 'failed', reason: 'protocol', error: `asset raw_orders ${said}; the asset was stopped` }]);
      }
    });

    it('fails an emit whose file is not Parquet where the worker stores it, not in the channel', async () => {
      const { outcome, emitted } = await runBundle(
        // A frame of bytes for call 1 holding only "PAR1", then the emit's call.
        writes(`00000009` + `00` + `00000001` + Buffer.from('PAR1').toString('hex') + frame('{"type":"call","id":1,"method":"emit","arg":null}')),
      );
      expect(outcome).toMatchObject({ status: 'failed', reason: 'handler-failed', error: expect.stringMatching(/Parquet/) });
      expect(emitted).toEqual([]);
    });

    it('fails a child that makes more ctx calls at once than the worker answers', async () => {
      let calls = 0;
      const { outcome } = await runBundle(
        `export default async (ctx) => { await Promise.all(Array.from({ length: 1000 }, () => ctx.connection('db'))); };`,
        {},
        { connection: () => { calls += 1; return new Promise(() => undefined); } },
      );
      expect(outcome).toEqual({ status: 'failed', reason: 'protocol', error: `asset raw_orders made more than ${MAX_CALLS_IN_FLIGHT} ctx calls at once (await each one); the asset was stopped` });
      expect(calls).toBe(MAX_CALLS_IN_FLIGHT);
    });

    it('takes a flood of well-formed log lines without failing, and an emit after them in order', async () => {
      const { outcome, logs, emitted } = await runBundle(`export default async (ctx) => {
        for (let i = 0; i < 20000; i++) ctx.log('line', i);
        await ctx.emit(Array.from({ length: 60000 }, (_, id) => ({ id, at: new Date(id), big: BigInt(id) * 10n ** 12n, pad: 'x'.repeat(20) })));
      };`);
      expect(outcome).toEqual({ status: 'succeeded' });
      expect(logs.length).toBe(20000);
      expect(logs.at(-1)).toBe('line 19999');
      // About 5 MB of rows: one file of several row groups and frames, in order.
      expect(emitted).toHaveLength(1);
      expect(emitted[0]).toHaveLength(60000);
      expect(emitted[0]!.every((row, index) => row['id'] === index)).toBe(true);
      expect(emitted[0]![59999]).toEqual({ id: 59999, at: '1970-01-01T00:00:59.999Z', big: 59999n * 10n ** 12n, pad: 'x'.repeat(20) });
    });
  });

  it('is still alive and running assets after all of the above', async () => {
    const { outcome, emitted } = await runBundle(`export default (ctx) => ctx.emit([{ still: 'fine' }]);`);
    expect(outcome).toEqual({ status: 'succeeded' });
    expect(emitted).toEqual([[{ still: 'fine' }]]);
  });
});
