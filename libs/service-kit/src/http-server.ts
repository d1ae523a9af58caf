import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

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
