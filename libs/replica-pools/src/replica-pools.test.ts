import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ReplicaPools } from './replica-pools.ts';

const servers: Server[] = [];
const clients: ReplicaPools[] = [];

/** A replica that answers with its name and counts what it received. */
async function replica(name: string, behaviour: 'answer' | 'drop' = 'answer'): Promise<{ origin: string; received: string[] }> {
  const received: string[] = [];
  const server = createServer((req, res) => {
    received.push(`${req.method} ${req.url}`);
    if (behaviour === 'drop') {
      req.socket.destroy();
      return;
    }
    req.resume();
    req.on('end', () => res.end(name));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

/** An origin whose port nobody listens on (taken, then closed). */
async function closedOrigin(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

function poolsOf(origins: string[]): ReplicaPools {
  const pools = new ReplicaPools(origins, { connections: 4 });
  clients.push(pools);
  return pools;
}

async function text(pools: ReplicaPools, method: 'GET' | 'POST', body?: string | Readable): Promise<string> {
  const response = await pools.request({ method, path: '/x', body, idempotent: method === 'GET' });
  return response.body.text();
}

afterEach(async () => {
  await Promise.all(clients.splice(0).map((pools) => pools.close()));
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

describe('ReplicaPools', () => {
  it('takes the replicas in turn', async () => {
    const [a, b] = [await replica('a'), await replica('b')];
    const pools = poolsOf([a.origin, b.origin]);
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await text(pools, 'GET'));
    expect(answers).toEqual(['a', 'b', 'a', 'b', 'a', 'b']);
  });

  it('sends a request that a replica refused to the next one, a POST included', async () => {
    const live = await replica('live');
    const pools = poolsOf([await closedOrigin(), live.origin]);
    for (let i = 0; i < 4; i++) {
      expect(await text(pools, 'POST', '{}')).toBe('live');
      expect(await text(pools, 'GET')).toBe('live');
    }
    expect(live.received).toHaveLength(8);
  });

  it('fails with the refusal when every replica refuses', async () => {
    const pools = poolsOf([await closedOrigin(), await closedOrigin()]);
    await expect(text(pools, 'POST', '{}')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('does not send a streamed body again: it may be half read', async () => {
    const live = await replica('live');
    const pools = poolsOf([await closedOrigin(), live.origin]);
    await expect(text(pools, 'POST', Readable.from([Buffer.from('chunk')]))).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(live.received).toHaveLength(0);
  });

  it('sends a GET again after a reset socket, never a POST (it may have been received)', async () => {
    const dropping = await replica('dropping', 'drop');
    const live = await replica('live');
    const pools = poolsOf([dropping.origin, live.origin]);
    expect(await text(pools, 'GET')).toBe('live');
    expect(dropping.received).toEqual(['GET /x']);
    // The next turn is the live replica's; the one after is the dropping one's again.
    expect(await text(pools, 'POST', '{}')).toBe('live');
    await expect(text(pools, 'POST', '{}')).rejects.toMatchObject({ code: 'UND_ERR_SOCKET' });
    expect(dropping.received).toEqual(['GET /x', 'POST /x']);
    expect(live.received).toEqual(['GET /x', 'POST /x']);
  });
});
