// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- the package ships no types; the reference brings its declaration to every project that compiles this file.
/// <reference path="./cluster-key-slot.d.ts" />
import { connect, createServer, type Server, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import calculateSlot from 'cluster-key-slot';
import { CommandReader, encodeCommand, encodeError, encodeStatus, replyEnd, type CommandLimits, type ProtocolError } from './resp.ts';

/** What a gate does with one command (after AUTH): send it on to Redis, or answer it with an error itself. */
export type GateVerdict =
  /** To the node that serves these keys' slot (all of them in one slot). */
  | { forward: 'keys'; keys: readonly Buffer[] }
  /** To the node the connection authenticated on (a command without keys, such as INFO). */
  | { forward: 'home' }
  /** Answered by the gate itself with this reply (a filtered INFO, say); Redis is not asked. */
  | { answer: Buffer }
  | { refuse: string };

/** Which commands pass, by their arguments (`command[0]` is the name, in the case the client sent). */
export type GatePolicy = (command: readonly Buffer[]) => GateVerdict;

export interface GateLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface RedisGateOptions {
  host: string;
  /** 0 for a free port. */
  port: number;
  policy: GatePolicy;
  limits: CommandLimits;
  /** Only these users authenticate through the gate (AUTH <username> <password>; never the `default` user). */
  acceptsUser(username: string): boolean;
  /** The node (`host:port`) that serves a key slot now: the one server's address for every slot, or the cluster's layout. */
  nodeForSlot(slot: number): string | undefined;
  /** A Redis Cluster behind the gate: commands are routed by their keys' slot (one server takes every command as it is). */
  cluster: boolean;
  /** A node answered MOVED or ASK: the cluster's layout changed, and the next command should go by the new one. */
  layoutChanged?(): void;
  /** Reach the nodes over TLS (a `rediss://` REDIS_URL). */
  tls?: boolean;
  /** The database a single server's clients use (SELECTed after AUTH); a cluster has only 0. */
  database?: number;
  /** Commands a connection may have sent and not yet been answered; more cut it off. */
  maxPendingReplies?: number;
  /**
   * Reply bytes one connection may have waiting for it (written to a client that has not
   * read them, or held for their turn); past it the gate passes none of its further
   * commands and reads nothing more from it until the client has read enough. Default 1 MiB.
   */
  maxBufferedReplyBytes?: number;
  /**
   * Commands of one connection sent on and not yet answered: the next waits for a reply
   * (the gate reads no more of the client meanwhile), so what is on its way to the gate is
   * bounded too, whatever the size of each reply. Default 128.
   */
  maxCommandsInFlight?: number;
  /** How long a connection may stay past `maxBufferedReplyBytes` before the gate closes it. Default 30 s. */
  overBufferedTimeoutMs?: number;
  /**
   * Client connections open at once, of all users: each authenticated one holds a
   * connection to Redis, whose `maxclients` the engine's own services share. More are
   * closed as they arrive.
   */
  maxConnections: number;
  /** Connections one user may hold at once (so one credential cannot take them all); more are refused at AUTH. */
  maxConnectionsPerUser: number;
  /** How long a connection may stay without AUTH before it is closed (so idle strangers cannot hold `maxConnections`). */
  authTimeoutMs: number;
  log: GateLog;
}

export interface RedisGate {
  /** `host:port` it listens on. */
  address: string;
  /** Client connections open now. */
  connections(): number;
  /** Reply bytes the gate holds for its clients now, of all connections (what `maxBufferedReplyBytes` bounds per connection). */
  bufferedReplyBytes(): number;
  close(): Promise<void>;
}

/**
 * The slot of a key, as Redis Cluster computes it: CRC16 of the key, or of its `{hash tag}` when it has a non-empty one, mod 16384.
 * `cluster-key-slot` (ioredis's) computes the CRC; the tag is picked here by Redis's rule (from the first `{` to the first `}`
 * after it, an empty one hashing the whole key), where the package's own differs: it reads past an empty `{}` to a later
 * `}`, so `foo{}{bar}` would go to the slot of `{bar`, not the one Redis serves that key from.
 */
export function keySlot(key: Buffer | string): number {
  const bytes = typeof key === 'string' ? Buffer.from(key) : key;
  const open = bytes.indexOf(0x7b /* '{' */);
  const close = open >= 0 ? bytes.indexOf(0x7d /* '}' */, open + 1) : -1;
  // A tag has no `}`, so the package hashes all of it.
  if (close > open + 1) return calculateSlot(bytes.subarray(open + 1, close));
  // No tag by Redis's rule, and none by the package's either when no `}` follows the empty `{}`.
  if (close < 0 || bytes.indexOf(0x7d, close + 1) < 0) return calculateSlot(bytes);
  // The package would find a tag past the empty one: hash the whole key with no brace in it. The CRC (zero start, no final
  // xor) is linear, so the key's CRC is that of the key with every brace's low bit flipped (`{` -> `z`, `}` -> `|`) xor
  // that of the flips alone (0x01 at each brace, 0 elsewhere); neither holds a brace, and the xor keeps the slot's bits.
  const flipped = Buffer.from(bytes);
  const flips = Buffer.alloc(bytes.length);
  for (let index = 0; index < bytes.length; index++) {
    if (bytes[index] === 0x7b || bytes[index] === 0x7d) {
      flipped[index] = bytes[index]! ^ 0x01;
      flips[index] = 0x01;
    }
  }
  return calculateSlot(flipped) ^ calculateSlot(flips);
}

/**
 * A gate in front of Redis for clients that must not send every command their Redis user
 * may run: Redis applies a user's ACL inside the Lua scripts it runs too, so a user allowed
 * to run a script that writes may also write with plain commands. The gate lets through
 * only what its policy says, with bounded sizes, on connections that authenticate as a
 * user it accepts; Redis still checks the user's password and its ACL (keys, commands)
 * on everything that passes. Behind it one server or a Redis Cluster: a client sees one
 * plain server, and each command goes to the node that serves its keys (replies come back
 * in the order the commands were sent, as RESP requires).
 */
export async function startRedisGate(options: RedisGateOptions): Promise<RedisGate> {
  const open = new Set<GateConnection>();
  const users = new UserConnections(options.maxConnectionsPerUser);
  const server: Server = createServer((socket) => {
    const connection = new GateConnection(socket, options, users);
    open.add(connection);
    socket.once('close', () => open.delete(connection));
  });
  server.maxConnections = options.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    address: `${options.host}:${port}`,
    connections: () => open.size,
    bufferedReplyBytes: () => [...open].reduce((sum, connection) => sum + connection.bufferedBytes(), 0),
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const connection of open) connection.destroy();
      await closed;
    },
  };
}

/** A command's place in the order of replies: filled when its reply arrives (or at once, for the gate's own). */
interface PendingReply {
  reply?: Buffer;
  /** The client's AUTH: refused, the connection is ended (it holds a connection to Redis and may do nothing with it). */
  hangUpOnError?: boolean;
}

/** How many connections each user holds through the gate. */
class UserConnections {
  private readonly held = new Map<string, number>();

  constructor(private readonly perUser: number) {}

  take(username: string): boolean {
    const count = this.held.get(username) ?? 0;
    if (count >= this.perUser) return false;
    this.held.set(username, count + 1);
    return true;
  }

  give(username: string): void {
    const count = (this.held.get(username) ?? 1) - 1;
    if (count <= 0) this.held.delete(username);
    else this.held.set(username, count);
  }
}

/** One connection to a Redis node on behalf of one client, authenticated as the client's user. */
interface Upstream {
  socket: Socket;
  received: Buffer;
  /** Replies this node owes, in order; `internal` ones (the AUTH sent on a node the client never named) are the gate's. */
  awaiting: Array<PendingReply & { internal?: boolean }>;
}

const DEFAULT_MAX_PENDING_REPLIES = 1024;
const DEFAULT_MAX_BUFFERED_REPLY_BYTES = 1024 * 1024;
const DEFAULT_MAX_COMMANDS_IN_FLIGHT = 128;
const DEFAULT_OVER_BUFFERED_TIMEOUT_MS = 30_000;
/** What stands for a reply that will never come (its node is gone), so that the ones after it go out. */
const NO_REPLY = Buffer.alloc(0);

class GateConnection {
  private readonly reader: CommandReader;
  private readonly pending: PendingReply[] = [];
  /** Commands read and not yet handled: held while the client's replies are over their byte cap (and the protocol error that ended its stream, if any). */
  private readonly queued: Array<{ command: Buffer[]; raw: Buffer } | { error: ProtocolError }> = [];
  /** Bytes of replies in `pending` that have arrived and wait for an earlier one. */
  private heldBytes = 0;
  /** Set while the connection is over its reply byte cap: closes it if it stays so. */
  private overTimer: NodeJS.Timeout | undefined;
  private readonly maxBufferedBytes: number;
  private readonly upstreams = new Map<string, Upstream>();
  private credential: { username: Buffer; password: Buffer } | undefined;
  private home: string | undefined;
  private closed = false;
  /** The user whose connection count this connection holds, given back when it ends. */
  private counted: string | undefined;

  constructor(
    private readonly client: Socket,
    private readonly options: RedisGateOptions,
    private readonly users: UserConnections,
  ) {
    this.reader = new CommandReader(options.limits);
    this.maxBufferedBytes = options.maxBufferedReplyBytes ?? DEFAULT_MAX_BUFFERED_REPLY_BYTES;
    client.setNoDelay(true);
    // Until it authenticates; cleared at AUTH.
    client.setTimeout(options.authTimeoutMs, () => {
      if (!this.credential) this.destroy();
    });
    client.on('data', (chunk: Buffer) => this.onClientData(chunk));
    // The client read some of its replies: under the cap again, its commands go on.
    client.on('drain', () => this.relieve());
    client.on('error', () => this.destroy());
    client.on('close', () => this.destroy());
  }

  /** Reply bytes this connection holds for its client: written and unread, held for their turn, or arriving from Redis. */
  bufferedBytes(): number {
    let bytes = this.client.writableLength + this.heldBytes;
    for (const upstream of this.upstreams.values()) bytes += upstream.received.length;
    return bytes;
  }

  destroy(): void {
    this.closed = true;
    this.clearOverTimer();
    this.releaseCount();
    for (const upstream of this.upstreams.values()) upstream.socket.destroy();
    this.upstreams.clear();
    this.client.destroy();
  }

  private releaseCount(): void {
    if (this.counted === undefined) return;
    this.users.give(this.counted);
    this.counted = undefined;
  }

  private onClientData(chunk: Buffer): void {
    const { commands, raw, error } = this.reader.push(chunk);
    for (const [index, command] of commands.entries()) this.queued.push({ command, raw: raw[index]! });
    if (error) this.queued.push({ error });
    this.handleQueued();
  }

  /** The commands read so far, in order, until the client's replies are over their cap (then the rest waits, and so does its socket). */
  private handleQueued(): void {
    while (this.queued.length > 0) {
      if (this.closed || this.ending) return;
      if (this.bufferedBytes() > this.maxBufferedBytes) {
        this.holdBack();
        return;
      }
      // As many on their way as it may have: the next goes when a reply has come (`onUpstreamData`).
      if (this.pending.length >= (this.options.maxCommandsInFlight ?? DEFAULT_MAX_COMMANDS_IN_FLIGHT)) {
        this.client.pause();
        return;
      }
      const next = this.queued.shift()!;
      // Its stream cannot be followed any further: the replies it is owed, why, and the end.
      if ('error' in next) this.refuseAndClose(`ERR ${next.error.message}; the gate closes this connection`);
      else this.onCommand(next.command, next.raw);
    }
  }

  /** Over the cap: nothing more is read from the client, and it is closed if it stays over. */
  private holdBack(): void {
    this.client.pause();
    this.overTimer ??= setTimeout(() => {
      if (this.bufferedBytes() > this.maxBufferedBytes) {
        this.options.log.warn({ buffered: this.bufferedBytes(), user: this.counted }, 'the pool gate closed a connection that left its replies unread');
        this.destroy();
      }
    }, this.options.overBufferedTimeoutMs ?? DEFAULT_OVER_BUFFERED_TIMEOUT_MS).unref();
  }

  /** After replies moved: over the cap, held back (and timed); under it, the client is read from and its held commands go on. */
  private relieve(): void {
    if (this.closed || this.ending) return;
    if (this.bufferedBytes() > this.maxBufferedBytes) return this.holdBack();
    this.clearOverTimer();
    this.client.resume();
    this.handleQueued();
  }

  private clearOverTimer(): void {
    if (this.overTimer) clearTimeout(this.overTimer);
    this.overTimer = undefined;
  }

  /** One command: `raw` is its bytes as the client sent them, passed on unchanged when the policy lets it through. */
  private onCommand(command: Buffer[], raw: Buffer): void {
    const name = command[0]!.toString('latin1').toLowerCase();
    if (this.pending.length >= (this.options.maxPendingReplies ?? DEFAULT_MAX_PENDING_REPLIES)) {
      this.refuseAndClose('ERR too many commands awaiting replies; the gate closes this connection');
      return;
    }
    if (name === 'quit') {
      this.answer(encodeStatus('OK'));
      this.endAfterReplies();
      return;
    }
    if (name === 'auth') return this.onAuth(command, raw);
    if (!this.credential) return this.answer(encodeError('NOAUTH Authentication required.'));
    const verdict = this.options.policy(command);
    if ('refuse' in verdict) return this.answer(encodeError(verdict.refuse));
    if ('answer' in verdict) return this.answer(verdict.answer);
    let node = this.home!;
    if (this.options.cluster && verdict.forward === 'keys' && verdict.keys.length > 0) {
      const slots = new Set(verdict.keys.map((key) => keySlot(key)));
      if (slots.size > 1) return this.answer(encodeError("CROSSSLOT Keys in request don't hash to the same slot"));
      node = this.options.nodeForSlot([...slots][0]!) ?? node;
    }
    this.forward(node, raw);
  }

  /** `AUTH <username> <password>`, once per connection: the node of slot 0 checks it, and the client gets its answer. */
  private onAuth(command: Buffer[], raw: Buffer): void {
    if (command.length !== 3) return this.answer(encodeError('ERR the gate takes AUTH <username> <password> only'));
    if (this.credential) return this.answer(encodeError('ERR this connection is authenticated already'));
    const username = command[1]!.toString('utf8');
    if (!this.options.acceptsUser(username)) return this.answer(encodeError('WRONGPASS invalid username-password pair or user is disabled.'));
    const node = this.options.nodeForSlot(0);
    if (!node) return this.answer(encodeError('CLUSTERDOWN the gate knows no Redis node to send this to'));
    if (!this.users.take(username)) {
      this.refuseAndClose(`ERR max number of clients reached for user ${JSON.stringify(username.slice(0, 80))} (${this.options.maxConnectionsPerUser}); the gate closes this connection`);
      return;
    }
    this.counted = username;
    this.credential = { username: command[1]!, password: command[2]! };
    this.client.setTimeout(0);
    this.home = node;
    this.forward(node, raw, { authenticates: true });
    this.selectDatabase(this.upstreams.get(node)!);
  }

  /** SELECT of the configured database, answered to the gate: clients may not SELECT through it. */
  private selectDatabase(upstream: Upstream): void {
    if (!this.options.database) return;
    upstream.socket.write(encodeCommand(['SELECT', String(this.options.database)]));
    upstream.awaiting.push({ internal: true });
  }

  /** Sends a command to a node (opened and authenticated first when this connection has not used it yet). */
  private forward(node: string, bytes: Buffer, options: { authenticates?: boolean } = {}): void {
    let upstream = this.upstreams.get(node);
    if (!upstream) {
      upstream = this.openUpstream(node);
      // A node other than the one AUTH went to: authenticate there too, its answer the gate's own.
      if (!options.authenticates) {
        upstream.socket.write(encodeCommand(['AUTH', this.credential!.username, this.credential!.password]));
        upstream.awaiting.push({ internal: true });
        this.selectDatabase(upstream);
      }
    }
    const entry: PendingReply = options.authenticates ? { hangUpOnError: true } : {};
    this.pending.push(entry);
    upstream.awaiting.push(entry);
    upstream.socket.write(bytes);
  }

  private openUpstream(node: string): Upstream {
    const separator = node.lastIndexOf(':');
    const host = node.slice(0, separator).replace(/^\[(.*)\]$/, '$1');
    const port = Number(node.slice(separator + 1));
    const socket = this.options.tls ? connectTls({ host, port, servername: host }) : connect({ host, port, noDelay: true });
    const upstream: Upstream = { socket, received: Buffer.alloc(0), awaiting: [] };
    this.upstreams.set(node, upstream);
    socket.on('data', (chunk: Buffer) => this.onUpstreamData(upstream, chunk));
    // Redis closed it (a user deleted, the server gone): the replies it owes never come, so
    // the client is hung up on once the others have been written.
    socket.on('error', (error) => this.options.log.warn({ node, err: error.message }, 'a Redis node behind the gate closed the connection'));
    socket.on('close', () => {
      for (const entry of upstream.awaiting) entry.reply ??= NO_REPLY;
      upstream.awaiting.length = 0;
      this.endAfterReplies();
    });
    return upstream;
  }

  private onUpstreamData(upstream: Upstream, chunk: Buffer): void {
    upstream.received = upstream.received.length === 0 ? chunk : Buffer.concat([upstream.received, chunk]);
    for (;;) {
      let end: number | undefined;
      try {
        end = replyEnd(upstream.received);
      } catch {
        this.destroy();
        return;
      }
      if (end === undefined) break;
      const reply = upstream.received.subarray(0, end);
      upstream.received = upstream.received.subarray(end);
      const entry = upstream.awaiting.shift();
      if (!entry) {
        // A reply nobody asked for (a server pushing): not the protocol this gate speaks.
        this.destroy();
        return;
      }
      if ('internal' in entry) {
        if (reply[0] === 0x2d /* '-' */) {
          // The client's credential refused (its AUTH's own answer says so first), or a node without its user: hang up.
          this.flush();
          this.destroyAfterWrite();
          return;
        }
        continue;
      }
      if (reply[0] === 0x2d && /^-(MOVED|ASK) /.test(reply.toString('latin1', 0, 7))) this.options.layoutChanged?.();
      entry.reply = reply;
      this.heldBytes += reply.length;
      if (entry.hangUpOnError && reply[0] === 0x2d) {
        // Ended by the flush below, once the replies before it and this one have gone out.
        this.ending = true;
        this.client.pause();
      }
    }
    this.flush();
    this.relieve();
  }

  /** An answer of the gate's own, in its place among the replies. */
  private answer(reply: Buffer): void {
    this.pending.push({ reply });
    this.heldBytes += reply.length;
    this.flush();
  }

  private flush(): void {
    const ready: Buffer[] = [];
    while (this.pending.length > 0 && this.pending[0]!.reply) {
      const reply = this.pending.shift()!.reply!;
      this.heldBytes -= reply.length;
      ready.push(reply);
    }
    // Written to the socket, whose buffer counts towards the cap until the client reads it (`drain` lets it go on).
    if (ready.length > 0 && !this.closed) this.client.write(ready.length === 1 ? ready[0]! : Buffer.concat(ready));
    if (this.ending && this.pending.length === 0) this.destroyAfterWrite();
  }

  private ending = false;

  /** Ends the connection once every reply already owed to the client has been written; nothing more is read from it. */
  private endAfterReplies(): void {
    this.ending = true;
    this.client.pause();
    this.flush();
  }

  /** Reads nothing more from the client: the replies it is owed, then this error, then it is hung up on. */
  private refuseAndClose(message: string): void {
    this.pending.push({ reply: encodeError(message) });
    this.endAfterReplies();
  }

  private destroyAfterWrite(): void {
    if (this.closed) return;
    this.closed = true;
    this.clearOverTimer();
    this.releaseCount();
    for (const upstream of this.upstreams.values()) upstream.socket.destroy();
    this.upstreams.clear();
    // Once what was written has gone out, whatever the client does.
    this.client.destroySoon();
  }
}
