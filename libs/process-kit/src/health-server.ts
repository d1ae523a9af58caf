import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { livenessBody, readinessReport, type ReadinessCheck } from './readiness.ts';

export interface HealthServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/**
 * `/healthz`, `/readyz` and (when given) `/metrics` alone, on Node's own HTTP server, for
 * processes that serve no API (the attempt-worker): no web framework to ship to a pool host.
 */
export async function startHealthServer(options: {
  service: string;
  host: string;
  port: number;
  readiness: Record<string, ReadinessCheck>;
  /** `/metrics`: the Prometheus exposition, when the process keeps metrics. */
  metrics?: () => Promise<{ contentType: string; text: string }>;
}): Promise<HealthServer> {
  const server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body));
    };
    const path = (req.url ?? '/').split('?')[0];
    const metrics = options.metrics;
    if (path !== '/healthz' && path !== '/readyz' && !(path === '/metrics' && metrics)) {
      return send(404, { error: { code: 'not_found', message: `No route matches ${req.method} ${path}.`, details: [] } });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return send(405, { error: { code: 'method_not_allowed', message: `${path} answers GET and HEAD only.`, details: [] } });
    }
    if (path === '/healthz') return send(200, { data: livenessBody(options.service) });
    if (path === '/metrics' && metrics) {
      metrics().then(
        ({ contentType, text }) => {
          res.writeHead(200, { 'content-type': contentType });
          res.end(text);
        },
        () => send(503, { error: { code: 'unavailable', message: 'The metrics could not be collected.', details: [] } }),
      );
      return;
    }
    if (path === '/readyz') {
      readinessReport(options.service, options.readiness).then(
        ({ ready, body }) => send(ready ? 200 : 503, { data: body }),
        () => send(503, { data: { status: 'unavailable', service: options.service, checks: {} } }),
      );
      return;
    }
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
