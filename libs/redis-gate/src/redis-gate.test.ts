import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandReader, encodeBulk, encodeCommand, encodeStatus, replyEnd } from './resp.ts';
import { startRedisGate, type RedisGate } from './redis-gate.ts';

/** Each reply of the stand-in server: 32 KiB, so that a few dozen unread fill the cap. */
const REPLY_BYTES = 32 * 1024;
const CAP = 64 * 1024;
const COMMANDS = 2000;
const IN_FLIGHT = 8;

let upstream: Server;
/** Commands the stand-in server has answered (AUTH aside). */
let answered = 0;
let gate: RedisGate;

beforeAll(async () => {
  // A stand-in for Redis: AUTH is OK, every other command gets a 32 KiB bulk string.
  const reply = encodeBulk(Buffer.alloc(REPLY_BYTES, 'r'));
  upstream = createServer((socket) => {
    const reader = new CommandReader({ maxArgumentBytes: 1024, maxArguments: 8, maxCommandBytes: 4096 });
    socket.on('data', (chunk: Buffer) => {
      for (const command of reader.push(chunk).commands) {
        if (command[0]!.toString().toLowerCase() === 'auth') socket.write(encodeStatus('OK'));
        else {
          answered++;
          socket.write(reply);
        }
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const port = (upstream.address() as { port: number }).port;
  gate = await startRedisGate({
    host: '127.0.0.1',
    port: 0,
    policy: () => ({ forward: 'home' }),
    limits: { maxArgumentBytes: 1024, maxArguments: 8, maxCommandBytes: 4096 },
    acceptsUser: () => true,
    nodeForSlot: () => `127.0.0.1:${port}`,
    cluster: false,
    maxConnections: 16,
    maxConnectionsPerUser: 16,
    authTimeoutMs: 5000,
    maxPendingReplies: COMMANDS + 10,
    maxBufferedReplyBytes: CAP,
    maxCommandsInFlight: IN_FLIGHT,
    overBufferedTimeoutMs: 300,
    log: { info: () => undefined, warn: () => undefined },
  });
});

afterAll(async () => {
  await gate?.close();
  await new Promise((resolve) => upstream?.close(resolve));
});

const pipeline = () => Buffer.concat([encodeCommand(['AUTH', 'u', 'p']), ...Array.from({ length: COMMANDS }, () => encodeCommand(['GET', 'k']))]);
const gateSocket = (): Socket => connect({ host: '127.0.0.1', port: Number(gate.address.split(':').pop()) });

describe('the gate, in front of a server with large replies', () => {
  it('passes none of a client\'s further commands while its replies are unread past the cap, and closes it if it stays so', async () => {
    answered = 0;
    const socket = gateSocket();
    // Never reads a reply.
    socket.pause();
    socket.on('error', () => undefined);
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, gate.bufferedReplyBytes())), 5);
    socket.write(pipeline());
    // Evidence either way: the gate has closed it (a paused socket does not see the close; the gate's count does), or the server has answered every command (no cap).
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    for (const deadline = Date.now() + 5000; gate.connections() === 0 && Date.now() < deadline; ) await new Promise((resolve) => setImmediate(resolve));
    const outcome = await new Promise<string>((resolve) => {
      const done = setInterval(() => {
        const seen = gate.connections() === 0 ? 'closed' : answered >= COMMANDS ? 'all answered' : undefined;
        if (seen) {
          clearInterval(done);
          resolve(seen);
        }
      }, 5);
    });
    clearInterval(watch);
    socket.destroy();
    if (process.env['GATE_PROBE_NUMBERS']) console.log({ outcome, most, answered });
    expect(outcome).toBe('closed');
    // What it held: the cap, and at most the replies of the commands on their way when it was reached.
    expect(most).toBeLessThanOrEqual(CAP + (IN_FLIGHT + 1) * REPLY_BYTES);
    expect(answered).toBeLessThan(COMMANDS);
  });

  it('answers every command of a client that reads its replies', async () => {
    answered = 0;
    const socket = gateSocket();
    let received = Buffer.alloc(0);
    let replies = 0;
    await new Promise<void>((resolve, reject) => {
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        for (let end = replyEnd(received); end !== undefined; end = replyEnd(received)) {
          replies++;
          received = received.subarray(end);
        }
        if (replies === COMMANDS + 1) resolve();
      });
      socket.write(pipeline());
    });
    socket.destroy();
    expect(replies).toBe(COMMANDS + 1);
  });
});

describe('the gate, in front of a Redis Cluster', () => {
  // Two stand-in nodes, each answering every command with its own name: slots 0-8191 on `low`, 8192-16383 on `high`.
  const nodes: Server[] = [];
  let clusterGate: RedisGate;

  beforeAll(async () => {
    const addresses: string[] = [];
    for (const name of ['low', 'high']) {
      const node = createServer((socket) => {
        const reader = new CommandReader({ maxArgumentBytes: 1024, maxArguments: 8, maxCommandBytes: 4096 });
        socket.on('data', (chunk: Buffer) => {
          for (const command of reader.push(chunk).commands) socket.write(encodeStatus(command[0]!.toString().toLowerCase() === 'auth' ? 'OK' : name));
        });
        socket.on('error', () => undefined);
      });
      await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
      nodes.push(node);
      addresses.push(`127.0.0.1:${(node.address() as { port: number }).port}`);
    }
    clusterGate = await startRedisGate({
      host: '127.0.0.1',
      port: 0,
      policy: (command) => ({ forward: 'keys', keys: command.slice(1) }),
      limits: { maxArgumentBytes: 1024, maxArguments: 8, maxCommandBytes: 4096 },
      acceptsUser: () => true,
      nodeForSlot: (slot) => addresses[slot < 8192 ? 0 : 1],
      cluster: true,
      maxConnections: 4,
      maxConnectionsPerUser: 4,
      authTimeoutMs: 5000,
      log: { info: () => undefined, warn: () => undefined },
    });
  });

  afterAll(async () => {
    await clusterGate?.close();
    for (const node of nodes) await new Promise((resolve) => node.close(resolve));
  });

  /** The replies to AUTH and then `commands`, as text. */
  async function ask(commands: string[][]): Promise<string[]> {
    const socket = connect({ host: '127.0.0.1', port: Number(clusterGate.address.split(':').pop()) });
    let received = Buffer.alloc(0);
    const replies: string[] = [];
    await new Promise<void>((resolve, reject) => {
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        for (let end = replyEnd(received); end !== undefined; end = replyEnd(received)) {
          replies.push(received.toString('utf8', 0, end - 2));
          received = received.subarray(end);
        }
        if (replies.length === commands.length + 1) resolve();
      });
      socket.write(Buffer.concat([['AUTH', 'u', 'p'], ...commands].map((command) => encodeCommand(command))));
    });
    socket.destroy();
    return replies.slice(1);
  }

  it("sends each command to the node of its keys' slot, a hash tag's keys together", async () => {
    // Slots by CLUSTER KEYSLOT: bar 5061, foo 12182, foo{}{bar} 8363 (an empty tag hashes the whole key).
    expect(await ask([['GET', 'bar'], ['GET', 'foo'], ['GET', 'foo{bar}'], ['MGET', '{foo}a', '{foo}b'], ['GET', 'foo{}{bar}']])).toEqual(['+low', '+high', '+low', '+high', '+high']);
  });

  it('refuses a command whose keys lie in two slots', async () => {
    expect(await ask([['MGET', 'foo', 'bar'], ['MGET', '{bar}x', 'bar']])).toEqual(["-CROSSSLOT Keys in request don't hash to the same slot", '+low']);
  });
});
