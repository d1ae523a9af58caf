// A TCP proxy on a loopback port, between a pool worker and the engine (its gateway, its
// Redis), for the soak's network faults: a pool's host losing its network for longer than
// a lease (every connection reset, new ones refused), or a slow link (every chunk held for
// a while, in order). Nothing of the engine knows it is there.
import { createServer, connect, type Server, type Socket } from 'node:net';

export class LoopbackProxy {
  private readonly sockets = new Set<Socket>();
  private partitioned = false;
  /** Added to every chunk in both directions (0: passed on at once). */
  private delayMs = 0;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  /** Listens on a free loopback port and forwards each connection to `target`. */
  static async start(target: { host: string; port: number }): Promise<LoopbackProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const proxy = new LoopbackProxy(server, (server.address() as { port: number }).port);
    server.on('connection', (client) => proxy.accept(client, target));
    return proxy;
  }

  /** Resets every connection, and resets each new one at once, until `heal`. */
  partition(): void {
    this.partitioned = true;
    for (const socket of this.sockets) socket.resetAndDestroy();
  }

  /** Holds every chunk, both ways, `ms` before passing it on, until `heal`. */
  delay(ms: number): void {
    this.delayMs = ms;
  }

  heal(): void {
    this.partitioned = false;
    this.delayMs = 0;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    if (this.partitioned) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(target);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      // Either end's error ends both; the other side sees the connection reset.
      socket.on('error', () => undefined);
    }
    this.forward(client, upstream);
    this.forward(upstream, client);
  }

  /** `from`'s bytes to `to`, each chunk after the delay in force when it arrived, in order. */
  private forward(from: Socket, to: Socket): void {
    let queue = Promise.resolve();
    from.on('data', (chunk: Buffer) => {
      const delayMs = this.delayMs;
      queue = queue.then(async () => {
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
        if (!to.destroyed) to.write(chunk);
      });
    });
    from.on('end', () => void queue.then(() => to.end()));
    from.on('close', () => void queue.then(() => to.destroy()));
  }
}
