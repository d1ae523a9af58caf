import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type { Logger } from './logger.ts';

export interface RunningHttpServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** Listens on host:port; `close` stops accepting, lets requests in flight finish, then ends. */
export async function startHttpServer(app: Express, host: string, port: number): Promise<RunningHttpServer> {
  let closing = false;
  // Keep-alive connections busy at close time would otherwise stay open until their idle
  // timeout: once closing, every answer says `Connection: close` (set before the app
  // runs, since a synchronous answer has sent its headers by the time it returns), and
  // idle connections are cut.
  const server = createServer((req, res) => {
    if (closing) res.setHeader('Connection', 'close');
    app(req, res);
  });
  // Longer than a load balancer's idle timeout, so that the proxy closes first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    server,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        server.close(() => {
          clearInterval(sweep);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits; a stop that hangs is cut off after
 * `graceMs` so that an orchestrator's kill is never needed.
 */
export function stopOnSignals(log: Logger, stop: () => Promise<void>, graceMs = 10_000): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    const timer = setTimeout(() => {
      log.error({ grace_ms: graceMs }, 'stop took too long; exiting');
      process.exit(1);
    }, graceMs);
    timer.unref();
    stop().then(
      () => {
        log.info('stopped');
        log.flush(() => process.exit(0));
      },
      (error: unknown) => {
        log.error({ err: error instanceof Error ? error.message : String(error) }, 'stop failed');
        log.flush(() => process.exit(1));
      },
    );
  };
  process.on('SIGTERM', handle);
  process.on('SIGINT', handle);
}
