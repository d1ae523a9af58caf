import { spawnSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { connect } from 'node:net';
import { ManagedProcess, waitUntil } from '@envengine/backing-servers';

/** A host "outside" the engine, for egress tests: a server in a network namespace of its own. */
export interface OutsideHost {
  /** Its address, in TEST-NET-3 (203.0.113.0/24): never a real outside address. */
  address: string;
  port: number;
  stop(): Promise<void>;
}

function ip(args: string[]): void {
  const result = spawnSync('ip', args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`ip ${args.join(' ')} failed: ${result.stderr || result.error?.message}`);
}

/**
 * Creates a network namespace joined to this host by a veth pair (a /30 of 203.0.113.0/24
 * each), and runs a TCP server there that answers "outside" to every connection. Needs root
 * and iproute2. Traffic to it never leaves this machine.
 */
export async function startOutsideHost(logFile: string): Promise<OutsideHost> {
  const id = randomBytes(3).toString('hex');
  const namespace = `envengine-outside-${id}`;
  const hostSide = `eeo${id}a`;
  const outsideSide = `eeo${id}b`;
  const base = randomInt(0, 64) * 4;
  const hostAddress = `203.0.113.${base + 1}`;
  const address = `203.0.113.${base + 2}`;
  const port = 8099;
  ip(['netns', 'add', namespace]);
  const removeAll = () => {
    spawnSync('ip', ['link', 'del', hostSide]);
    spawnSync('ip', ['netns', 'del', namespace]);
  };
  let server: ManagedProcess | undefined;
  try {
    ip(['link', 'add', hostSide, 'type', 'veth', 'peer', 'name', outsideSide]);
    ip(['link', 'set', outsideSide, 'netns', namespace]);
    ip(['addr', 'add', `${hostAddress}/30`, 'dev', hostSide]);
    ip(['link', 'set', hostSide, 'up']);
    ip(['-n', namespace, 'addr', 'add', `${address}/30`, 'dev', outsideSide]);
    ip(['-n', namespace, 'link', 'set', outsideSide, 'up']);
    ip(['-n', namespace, 'link', 'set', 'lo', 'up']);
    server = new ManagedProcess({
      name: 'outside-host',
      command: 'ip',
      args: ['netns', 'exec', namespace, process.execPath, '-e', `require('node:net').createServer((socket) => socket.end('outside')).listen(${port}, '0.0.0.0')`],
      logFile,
      env: { PATH: process.env.PATH },
    });
    await waitUntil('the outside host', () => answers(address, port), { timeoutMs: 15_000, alive: () => server!.running, logFile });
  } catch (error) {
    await server?.stop();
    removeAll();
    throw error;
  }
  return {
    address,
    port,
    stop: async () => {
      await server?.stop();
      removeAll();
    },
  };
}

function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1000 });
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString() === 'outside');
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

