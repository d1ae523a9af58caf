import { createServer, connect } from 'node:net';

/** A TCP port that is free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Ports this process has handed out from a range: never twice, though the first taker has not bound it yet. */
const handedOut = new Set<number>();

/**
 * A free port from `[low, high]`, for a server that cannot store an ephemeral one (Temporal
 * keeps its members' ports in a PostgreSQL smallint, at most 32767), or one that binds only
 * after it has made connections of its own: Linux hands out ephemeral ports (from 32768)
 * to outgoing connections too, so one freed by `freePort` can be taken by a client before
 * its server binds it. Random tries; a taken one, or one handed out already, is skipped.
 */
export async function freePortInRange(low: number, high: number): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (handedOut.has(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.unref();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port between ${low} and ${high}`);
}

export function canConnect(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** A probe's answer that waiting longer cannot change (e.g. credentials the server refuses). */
export class StartupRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupRefused';
  }
}

/**
 * Polls `probe` until it resolves true. Fails early when `alive` says the process died,
 * so a server that cannot start is reported at once with where its log is; a
 * `StartupRefused` from the probe ends the wait at once.
 */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  options: { timeoutMs: number; alive?: () => boolean; logFile?: string; explain?: () => Promise<string> },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  const hint = options.logFile ? ` (see ${options.logFile})` : '';
  while (Date.now() < deadline) {
    if (options.alive && !options.alive()) throw new Error(`${what} exited during start-up${hint}`);
    const ready = await probe().catch((error: unknown) => {
      if (error instanceof StartupRefused) throw error;
      return false;
    });
    if (ready) return;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  // What it waits for, when the server can say: one line that tells the user why.
  const why = options.explain ? await options.explain().catch(() => '') : '';
  throw new Error(`${what} was not ready within ${options.timeoutMs} ms${why ? `: ${why}` : ''}${hint}`);
}
