import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { UpstreamForwarder, type ForwardRequest } from './upstream-forwarder.ts';

const BIG = Buffer.alloc(16 * 1024 * 1024, 7);
const servers: Server[] = [];
const forwarders: UpstreamForwarder[] = [];
const sockets: Socket[] = [];

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A service answering 16 MB at `/big` and a few bytes elsewhere; and a gateway of two connections per pool in front of it. */
async function gatewayInFront(): Promise<string> {
  const service = await listen(createServer((req, res) => res.end(req.url === '/api/v1/big' ? BIG : 'small')));
  const forwarder = new UpstreamForwarder({ placement: [service], deployment: [service], secrets: [service] }, 'x'.repeat(32), {
    connections: 2,
    streamConnections: 2,
    timeoutMs: 30_000,
    bodyRate: { minBytesPerSecond: 1000, windowMs: 200 },
  });
  forwarders.push(forwarder);
  const app = express();
  app.use((req, res) => {
    const request: ForwardRequest = { method: req.method, url: `/api/v1${req.url}`, headers: req.headers, body: undefined, tenantId: 't', requestId: 'r', actor: 'a' };
    forwarder.forward('placement', request, res, req.url === '/big' ? 'stream' : 'api').catch(() => res.destroy());
  });
  return listen(createServer(app));
}

/** A client that sends a GET and reads nothing. */
function unread(origin: string, path: string): Socket {
  const { port } = new URL(origin);
  const socket = connect(Number(port), '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`));
  socket.on('error', () => undefined);
  socket.pause();
  sockets.push(socket);
  return socket;
}

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(forwarders.splice(0).map((forwarder) => forwarder.close()));
  for (const server of servers.splice(0)) server.closeAllConnections();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

describe('UpstreamForwarder', () => {
  it('gives back the connections of clients that left, those that waited for one included', { timeout: 20_000 }, async () => {
    const gateway = await gatewayInFront();
    // Three times the pool: two read from the service, four wait for a connection.
    const clients = Array.from({ length: 6 }, () => unread(gateway, '/big'));
    await new Promise((resolve) => clients[0]!.once('readable', resolve));
    for (const client of clients) client.destroy();
    const answer = await fetch(`${gateway}/big`, { signal: AbortSignal.timeout(5000) });
    expect(answer.status).toBe(200);
    expect((await answer.arrayBuffer()).byteLength).toBe(BIG.length);
    const again = await Promise.all([fetch(`${gateway}/big`, { signal: AbortSignal.timeout(5000) }), fetch(`${gateway}/big`, { signal: AbortSignal.timeout(5000) })]);
    expect(await Promise.all(again.map(async (response) => (await response.arrayBuffer()).byteLength))).toEqual([BIG.length, BIG.length]);
  });

  it('cuts off a download whose client stops reading, and keeps the API pool free of it meanwhile', { timeout: 20_000 }, async () => {
    const gateway = await gatewayInFront();
    const stalled = [unread(gateway, '/big'), unread(gateway, '/big')];
    // The API's pool is another: served while both stream connections are held.
    const small = await fetch(`${gateway}/small`, { signal: AbortSignal.timeout(2000) });
    expect(await small.text()).toBe('small');
    // Both stream connections are held by clients that keep their sockets open and read
    // nothing: a third download is served only once the gateway has cut them off.
    const answer = await fetch(`${gateway}/big`, { signal: AbortSignal.timeout(5000) });
    expect((await answer.arrayBuffer()).byteLength).toBe(BIG.length);
    expect(stalled.every((socket) => !socket.destroyed)).toBe(true);
  });
});
