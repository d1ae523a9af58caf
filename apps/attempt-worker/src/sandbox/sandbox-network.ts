// Public egress for a sandboxed child (docs/design.md#the-network): slirp4netns gives the
// child's own network namespace a user-mode network (a tap device whose traffic slirp4netns
// turns into ordinary sockets of the worker's host), with the host's loopback refused
// (--disable-host-loopback). Before that, routes in the child's namespace make every private
// range, link-local (cloud metadata), CGNAT and each address of the engine host unreachable,
// so those are refused inside the sandbox, by IP, whatever a name resolves to. Only
// slirp4netns's own DNS forwarder (10.0.2.3) stays reachable in 10.0.0.0/8. docs/decisions.md
// says why slirp4netns rather than pasta.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { hostAddresses, REFUSED_RANGES } from '@envengine/egress-rules';

/** slirp4netns's network in the sandbox: the tap's own /24, with its DNS forwarder at .3. */
const SLIRP_TAP = 'tap0';
const SETUP_TIMEOUT_MS = 10_000;

/** The sandbox's /etc/resolv.conf: slirp4netns's DNS forwarder. */
export const RESOLV_CONF = 'nameserver 10.0.2.3\noptions timeout:2 attempts:2\n';

/** The `ip -batch` lines that make the refused destinations unreachable in the child's namespace. */
export function refusedRoutes(hostIps: readonly string[]): string {
  return [...REFUSED_RANGES, ...hostIps.map((ip) => `${ip}/32`)].map((range) => `route add unreachable ${range}`).join('\n') + '\n';
}

/**
 * Gives a child started by bwrap with `--info-fd 4` its network: reads the pid that holds
 * its namespaces, adds the refusing routes, starts slirp4netns on its network namespace and
 * waits until the tap is configured. slirp4netns ends with the child, or with this process.
 */
export function connectPublicEgress(child: ChildProcess): Promise<void> {
  return withTimeout(
    (async () => {
      const pid = await childPid(child.stdio[4] as Readable);
      const netns = `/proc/${pid}/ns/net`;
      // As root, the child's namespaces are joined directly; a worker of another user enters
      // the sandbox's user namespace first (which it owns) to be allowed into its network.
      const asOwner = process.getuid?.() === 0 ? [] : [`--user=/proc/${pid}/ns/user`, '--preserve-credentials'];
      await run('nsenter', [...asOwner, `--net=${netns}`, '--', 'ip', '-batch', '-'], refusedRoutes(hostAddresses()));
      const slirpUserns = process.getuid?.() === 0 ? [] : [`--userns-path=/proc/${pid}/ns/user`];
      const slirp = spawn(
        'slirp4netns',
        ['--configure', '--mtu=65520', '--disable-host-loopback', '--enable-sandbox', '--enable-seccomp', '--ready-fd=3', '--exit-fd=4', ...slirpUserns, '--netns-type=path', netns, SLIRP_TAP],
        // Out of the worker's process group, as the sandbox is (os-sandbox.ts); --exit-fd ends it with the worker.
        { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], detached: true },
      );
      child.once('exit', () => slirp.kill('SIGKILL'));
      let stderr = '';
      slirp.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-2000)));
      await new Promise<void>((resolve, reject) => {
        (slirp.stdio[3] as Readable).once('data', () => resolve());
        slirp.once('error', (error) => reject(new Error(`slirp4netns could not start (${error.message}); public egress needs it (apt-get install slirp4netns)`)));
        slirp.once('exit', (code) => reject(new Error(`slirp4netns exited with code ${code} before the network was up: ${stderr.trim()}`)));
      });
    })(),
    SETUP_TIMEOUT_MS,
    'setting up the public egress network',
  );
}

/** The `child-pid` bwrap writes as JSON on its info fd. */
function childPid(info: Readable): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = '';
    info.setEncoding('utf8');
    const onData = (chunk: string) => {
      text += chunk;
      const match = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (match) {
        info.off('data', onData);
        // The child may hold this fd too; what it writes later is ignored.
        info.resume();
        resolve(Number(match[1]));
      } else if (text.length > 4096) reject(new Error('bwrap wrote no child pid on its info fd'));
    };
    info.on('data', onData);
    info.once('end', () => reject(new Error('the sandbox ended before it was set up')));
  });
}

function run(command: string, args: string[], input: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', (error) => reject(new Error(`${command} could not start (${error.message}); public egress needs nsenter (util-linux) and ip (iproute2)`)));
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with code ${code}: ${stderr.trim()}`))));
    // A namespace that died first closes the pipe (EPIPE): its exit code says what went wrong.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(input);
  });
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
