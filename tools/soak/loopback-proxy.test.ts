import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoopbackProxy } from './loopback-proxy.ts';

/** Sends `text` through a new connection to `port` and resolves with what came back, or the error's code. */
function roundTrip(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => socket.write(text));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(String(data));
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    socket.once('close', () => resolve('closed'));
  });
}

describe('LoopbackProxy', () => {
  let echo: Server;
  let proxy: LoopbackProxy;

  beforeAll(async () => {
    echo = createServer((socket) => {
      socket.on('error', () => undefined); // reset by the proxy's partition
      socket.on('data', (data) => socket.write(`echo ${data}`));
    });
    echo.listen(0, '127.0.0.1');
    await once(echo, 'listening');
    proxy = await LoopbackProxy.start({ host: '127.0.0.1', port: (echo.address() as { port: number }).port });
  });

  afterAll(async () => {
    await proxy.close();
    echo.close();
  });

  it('passes bytes both ways', async () => {
    expect(await roundTrip(proxy.port, 'hello')).toBe('echo hello');
  });

  it('resets open connections and refuses new ones while partitioned, and passes again once healed', async () => {
    const open: Socket = connect({ host: '127.0.0.1', port: proxy.port });
    await once(open, 'connect');
    open.write('first');
    expect(String((await once(open, 'data'))[0])).toBe('echo first');
    const ended = new Promise<string>((resolve) => {
      open.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
      open.once('close', () => resolve('closed'));
    });
    proxy.partition();
    expect(await ended).toBe('ECONNRESET');
    expect(await roundTrip(proxy.port, 'during')).toMatch(/^(ECONNRESET|closed)$/);
    proxy.heal();
    expect(await roundTrip(proxy.port, 'after')).toBe('echo after');
  });

  it('holds each chunk for the delay, both ways, in order', async () => {
    proxy.delay(300);
    const started = performance.now();
    const answer = await roundTrip(proxy.port, 'slow');
    // Out and back: at least two delays (a lower bound, whatever the machine's speed).
    expect(performance.now() - started).toBeGreaterThanOrEqual(2 * 300 - 5);
    expect(answer).toBe('echo slow');
    proxy.heal();
  });
});
