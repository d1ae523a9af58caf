import { readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSandbox, runInSandbox, SANDBOX_BUNDLE, SANDBOX_NODE, spawnAssetChild, type SandboxSettings } from './os-sandbox.ts';
import { buildSeccompFilter } from './seccomp-filter.ts';

// The real sandbox (bubblewrap, and python3-seccomp to build the filter, both installed by
// the test command's first step), probed from inside with perl's `syscall`, which takes
// the numbers of x86_64: elsewhere these cases are skipped.

/** Calls made in the sandbox, as perl's `syscall` arguments (x86_64 numbers), each harmless if it succeeds. */
const CALLS: Record<string, string> = {
  // KEYCTL_GET_KEYRING_ID of the session keyring.
  keyctl: '250, 0, -3, 0',
  // A key in the process keyring.
  add_key: '248, "user", "k", "v", 1, -2',
  // No attributes: EFAULT where it is allowed.
  perf_event_open: '298, 0, 0, -1, -1, 0',
  bpf: '321, 0, 0, 0',
  // UFFD_USER_MODE_ONLY, which an unprivileged process may ask for.
  userfaultfd: '323, 1',
  io_uring_setup: '425, 1, 0',
  // CLONE_NEWUSER: bwrap's --disable-userns answers ENOSPC where the filter lets it through.
  unshare: '272, 0x10000000',
  clone_newuser: '56, 0x10000000 | 17, 0, 0, 0, 0',
  mount: '165, "none", "/tmp", "tmpfs", 0, 0',
  clone3: '435, 0, 0',
  // TIOCSTI on stdin, which is no terminal: ENOTTY where it is allowed.
  ioctl_tiocsti: '16, 0, 0x5412, "x"',
  // PTRACE_TRACEME: traced by its parent, which never stops it.
  ptrace_traceme: '101, 0, 0, 0, 0',
  // PER_BSD; last, as it changes the caller's personality where it is allowed.
  personality: '135, 6',
};
/** Calls whose answer without the filter is never EPERM here, whatever the host's sysctls (bpf, userfaultfd and io_uring can be turned off for unprivileged users, mount needs a capability). */
const ALLOWED_WITHOUT_FILTER = ['keyctl', 'add_key', 'perf_event_open', 'unshare', 'clone_newuser', 'ioctl_tiocsti', 'personality', 'ptrace_traceme'];

const PERL_PROBE = `for my $call (${Object.entries(CALLS)
  .map(([name, args]) => `["${name}", ${args}]`)
  .join(', ')}) { my ($name, $number, @args) = @$call; my $answer = syscall($number, @args); print "$name ", ($answer == -1 ? "$!" : "ok"), "\\n"; }`;

/** A Worker thread (glibc's pthread_create tries clone3 first) that reads a file (libuv's thread pool, or io_uring where it is allowed). */
const THREADED_SCRIPT = `
import { Worker } from 'node:worker_threads';
const worker = new Worker("require('node:fs/promises').readFile('${SANDBOX_BUNDLE}/data.txt', 'utf8').then((text) => require('node:worker_threads').parentPort.postMessage(text));", { eval: true });
worker.once('message', (text) => { console.log(text); process.exit(0); });
worker.once('error', (error) => { console.error(error); process.exit(1); });
`;

let filter: Buffer;
let bundleDir: string;

// ASSET_MEMORY_MB's default: a Worker thread's isolate reserves its code range under the data rlimit, which 128 MB does not leave room for.
const sandbox = (seccompFilter: Buffer | null): SandboxSettings => ({ mode: 'bwrap', memoryMb: 512, cpuSeconds: 60, tmpMb: 16, env: { TZ: 'UTC' }, cgroups: null, seccompFilter });

/** Each call's answer in the sandbox: `ok`, or the error's text. */
function answers(seccompFilter: Buffer | null): Record<string, string> {
  const probe = runInSandbox(sandbox(seccompFilter), bundleDir, ['/usr/bin/perl', '-e', PERL_PROBE]);
  expect(probe.status, probe.stderr).toBe(0);
  return Object.fromEntries(probe.stdout.trim().split('\n').map((line) => [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)]));
}

/** The pids under `root` (itself included), from each process's parent in /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc').filter((entry) => /^[0-9]+$/.test(entry))) {
    try {
      // The parent is the second field after the command's closing parenthesis.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  const found = [root];
  for (let i = 0; i < found.length; i++) found.push(...(children.get(found[i]!) ?? []));
  return found;
}

/** The `Seccomp:` mode of the sandboxed Node under `root` (0 none, 2 a filter), once it has started. */
async function seccompModeOfSandboxedNode(root: number): Promise<string> {
  for (let tries = 0; tries < 200; tries++) {
    for (const pid of descendants(root)) {
      try {
        if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] !== SANDBOX_NODE) continue;
        return /^Seccomp:\s*(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;
      } catch {
        // gone meanwhile
      }
    }
    await sleep(50);
  }
  throw new Error(`no ${SANDBOX_NODE} under pid ${root}`);
}

describe.skipIf(process.arch !== 'x64')('the sandbox seccomp filter', { timeout: 60_000 }, () => {
  beforeAll(async () => {
    const built = buildSeccompFilter();
    if ('problem' in built) throw new Error(`the filter could not be built: ${built.problem}`);
    filter = built.filter;
    bundleDir = await realpath(await mkdtemp(join(tmpdir(), 'seccomp-filter-')));
    // The sandbox runs as an unprivileged user, who must be able to reach the bundle.
    await chmod(bundleDir, 0o755);
    await writeFile(join(bundleDir, 'data.txt'), 'read in a worker thread');
    await writeFile(join(bundleDir, 'threads.mjs'), THREADED_SCRIPT);
  });

  afterAll(async () => {
    await rm(bundleDir, { recursive: true, force: true });
  });

  it('refuses the denied calls with EPERM, and clone3 with ENOSYS (glibc then uses clone, whose flags it checks)', () => {
    const got = answers(filter);
    const { clone3, ...denied } = got;
    expect(Object.keys(got).sort()).toEqual(Object.keys(CALLS).sort());
    expect(denied).toEqual(Object.fromEntries(Object.keys(denied).map((name) => [name, 'Operation not permitted'])));
    expect(clone3).toBe('Function not implemented');
  });

  it('is what refuses them: without it the same calls answer otherwise', () => {
    const got = answers(null);
    for (const name of ALLOWED_WITHOUT_FILTER) expect(got[name], name).not.toBe('Operation not permitted');
    expect(got['clone3']).not.toBe('Function not implemented');
  });

  it('runs Node: the start-up probe, and a Worker thread that reads a file', () => {
    expect(checkSandbox(sandbox(filter), bundleDir, process.env.PATH)).toBeNull();
    const threaded = runInSandbox(sandbox(filter), bundleDir, [SANDBOX_NODE, `${SANDBOX_BUNDLE}/threads.mjs`]);
    expect(threaded.stderr).toBe('');
    expect(threaded.stdout.trim()).toBe('read in a worker thread');
  });

  it("is loaded in each asset's child, beside public egress's info fd, and only when given", async () => {
    for (const [seccompFilter, egress, mode] of [[filter, 'public', '2'], [filter, 'none', '2'], [null, 'none', '0']] as const) {
      const child = spawnAssetChild(sandbox(seccompFilter), bundleDir, egress);
      try {
        await child.ready;
        expect(await seccompModeOfSandboxedNode(child.process.pid!)).toBe(mode);
      } finally {
        child.process.kill('SIGKILL');
      }
    }
  });

  it('says what the host lacks when the filter cannot be built', () => {
    expect(buildSeccompFilter('/nonexistent/python3')).toEqual({ problem: '/nonexistent/python3 is not installed' });
  });
});
